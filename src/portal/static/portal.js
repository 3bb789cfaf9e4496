// Progressive enhancement only: every page works without this file.
// - [data-copy="ID"] buttons copy the text of the element ID to the clipboard.
// - forms with data-confirm="question" ask before submitting.
document.addEventListener('click', (event) => {
  const button = event.target instanceof Element ? event.target.closest('[data-copy]') : null;
  if (!button) return;
  const source = document.getElementById(button.getAttribute('data-copy') || '');
  if (!source || !navigator.clipboard) return;
  navigator.clipboard.writeText(source.textContent.trim()).then(
    () => {
      button.textContent = 'Copied';
    },
    () => {
      button.textContent = 'Copy failed: select the text';
    },
  );
});
document.addEventListener('submit', (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement) || !form.dataset.confirm) return;
  if (!window.confirm(form.dataset.confirm)) event.preventDefault();
});
for (const button of document.querySelectorAll('[data-copy][hidden]')) button.hidden = false;
// Page viewer: hovering or focusing a line (its text or its polygon) highlights it on both sides.
const lineParts = (id) => document.querySelectorAll(`[data-line="${CSS.escape(id)}"]`);
const highlight = (event, on) => {
  const part = event.target instanceof Element ? event.target.closest('[data-line]') : null;
  if (!part) return;
  for (const element of lineParts(part.getAttribute('data-line'))) element.classList.toggle('active', on);
};
for (const [type, on] of [
  ['mouseover', true],
  ['mouseout', false],
  ['focusin', true],
  ['focusout', false],
]) {
  document.addEventListener(type, (event) => highlight(event, on));
}
// While the page shows a queued or processing job (or a queued or training model), the part
// `selector` finds refreshes itself every 2 seconds (the same page fetched again, that part
// swapped in); without script, reload. The jobs and models lists swap their rows in, a job's page
// its state, pages and timeline, a model's page its state, progress, chart and figures.
const keepLive = (selector) => {
  const refresh = async () => {
    const current = document.querySelector(selector);
    if (!current?.querySelector('.state-queued, .state-processing, .state-training')) return;
    try {
      const response = await fetch(location.href, { headers: { Accept: 'text/html' }, credentials: 'same-origin' });
      if (response.ok && response.url === location.href) {
        const next = new DOMParser().parseFromString(await response.text(), 'text/html').querySelector(selector);
        if (next) current.replaceWith(document.importNode(next, true));
      }
    } finally {
      setTimeout(refresh, 2000);
    }
  };
  if (document.querySelector(selector)) setTimeout(refresh, 2000);
};
keepLive('table[data-live] tbody');
keepLive('[data-live-job]');
keepLive('[data-live-model]');
// New job: image files or a folder of images, zipped here into the form's ZIP field, as `hwr submit`
// zips them (docs/client.md): images by their extension (the page gives the list), a layout file
// beside its image (`p1.xml` for `p1.jpg`), hidden files and anything else left out, a folder's
// images named by their path below it. Train a model (`data-layouts="all"`): every XML file is
// kept where it lies, as `hwr models train` zips ground truth (an export's `page/p1.xml`). Stored, not deflated (scans are compressed already); the
// service orders the pages (natural order of the names) and checks everything as for any ZIP.
// Without script the form takes a ZIP only.
const CRC_TABLE = new Uint32Array(256).map((_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
const crc32 = (bytes) => {
  let c = 0xffffffff;
  for (let i = 0; i < bytes.length; i++) c = CRC_TABLE[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
};
/** A ZIP (stored entries, UTF-8 names, 1980-01-01 stamps) of `entries` ({ name, file }), as a Blob that reads the files lazily. */
const storedZip = async (entries) => {
  if (entries.length > 0xffff) throw new Error('over 65 535 files: make the ZIP yourself (ZIP64)');
  const encoder = new TextEncoder();
  const parts = [];
  const directory = [];
  let offset = 0;
  for (const { name, file } of entries) {
    const nameBytes = encoder.encode(name);
    const crc = crc32(new Uint8Array(await file.arrayBuffer()));
    if (offset + 30 + nameBytes.length + file.size > 0xffffffff) throw new Error('over 4 GB: make the ZIP yourself (ZIP64)');
    const local = new DataView(new ArrayBuffer(30));
    const central = new DataView(new ArrayBuffer(46));
    for (const [view, at] of [
      [local, 4],
      [central, 6],
    ]) {
      view.setUint16(at, 20, true); // version needed
      view.setUint16(at + 2, 0x0800, true); // UTF-8 names
      view.setUint16(at + 6, 0, true); // time
      view.setUint16(at + 8, 0x21, true); // date: 1980-01-01
      view.setUint32(at + 10, crc, true);
      view.setUint32(at + 14, file.size, true);
      view.setUint32(at + 18, file.size, true);
      view.setUint16(at + 22, nameBytes.length, true);
    }
    local.setUint32(0, 0x04034b50, true);
    central.setUint32(0, 0x02014b50, true);
    central.setUint16(4, 20, true); // made by: MS-DOS attributes
    central.setUint32(42, offset, true);
    parts.push(local.buffer, nameBytes, file);
    directory.push(central.buffer, nameBytes);
    offset += 30 + nameBytes.length + file.size;
  }
  const end = new DataView(new ArrayBuffer(22));
  end.setUint32(0, 0x06054b50, true);
  end.setUint16(8, entries.length, true);
  end.setUint16(10, entries.length, true);
  end.setUint32(
    12,
    directory.reduce((size, part) => size + part.byteLength, 0),
    true,
  );
  end.setUint32(16, offset, true);
  return new Blob([...parts, ...directory, end.buffer], { type: 'application/zip' });
};
const picker = document.querySelector('[data-scan-picker]');
if (picker && typeof DataTransfer === 'function') {
  const zipInput = document.getElementById(picker.dataset.zipInput);
  const summary = picker.querySelector('[data-scan-summary]');
  const extensions = new Set(picker.dataset.extensions.split(' '));
  const extension = (name) => (/\.[^./]*$/.exec(name)?.[0] ?? '').toLowerCase();
  const stem = (name) => name.slice(0, name.length - extension(name).length);
  const size = (bytes) => (bytes < 1e6 ? `${Math.ceil(bytes / 1e3)} kB` : `${(bytes / 1e6).toFixed(1)} MB`);
  picker.hidden = false;
  // A ZIP chosen itself replaces what was zipped here.
  zipInput.addEventListener('change', () => {
    for (const input of picker.querySelectorAll('input[type=file]')) input.value = '';
    summary.textContent = '';
  });
  picker.addEventListener('change', async (event) => {
    const input = event.target;
    if (!(input instanceof HTMLInputElement) || !input.files) return;
    for (const other of picker.querySelectorAll('input[type=file]')) if (other !== input) other.value = '';
    const folder = input.dataset.pick === 'folder';
    const named = [...input.files].map((file) => {
      // A folder's files keep their path below it (webkitRelativePath starts with the folder's own name).
      const name = folder ? file.webkitRelativePath.split('/').slice(1).join('/') : file.name;
      return { name, file };
    });
    const kept = named.filter(({ name }) => !name.split('/').some((segment) => segment.startsWith('.') || segment === '__MACOSX'));
    const images = kept.filter(({ name }) => extensions.has(extension(name)));
    const names = new Set();
    for (const { name } of images) {
      if (names.has(name)) {
        summary.textContent = `Two pages would be named ${name}: choose their folder instead.`;
        zipInput.value = '';
        return;
      }
      names.add(name);
    }
    const stems = images.map(({ name }) => stem(name));
    const allLayouts = picker.dataset.layouts === 'all';
    const layouts = kept.filter(
      ({ name }) => extension(name) === '.xml' && (allLayouts || stems.filter((candidate) => candidate === stem(name)).length === 1),
    );
    if (images.length === 0) {
      summary.textContent = 'No images among these files.';
      zipInput.value = '';
      return;
    }
    summary.textContent = `Zipping ${images.length} images…`;
    try {
      const zip = await storedZip([...images, ...layouts]);
      const chosen = new DataTransfer();
      const zipName = `${folder ? input.files[0].webkitRelativePath.split('/')[0] : 'pages'}.zip`;
      chosen.items.add(new File([zip], zipName, { type: 'application/zip' }));
      zipInput.files = chosen.files;
      const skipped = named.length - images.length - layouts.length;
      summary.textContent =
        `${images.length} image${images.length === 1 ? '' : 's'} zipped` +
        (layouts.length ? ` with ${layouts.length} layout file${layouts.length === 1 ? '' : 's'}` : '') +
        ` (${size(zip.size)}) as ${zipName}` +
        (skipped ? `; ${skipped} other file${skipped === 1 ? '' : 's'} left out` : '') +
        '. Submit to upload it.';
    } catch (error) {
      summary.textContent = `These files could not be zipped: ${error.message}`;
      zipInput.value = '';
    }
  });
}
// Page viewer, zoom and pan: the SVG's viewBox is the part of the page shown (the outlines are in
// page pixels, so they follow); the wheel or the buttons zoom (up to 8×) around the pointer or the
// middle, dragging pans, and past 1.5× the image is fetched 2,400 px wide. A selected line's
// outline is brought into view. Without script the whole page is shown.
const zoomFigure = document.querySelector('[data-zoom]');
const zoomer = (() => {
  if (!zoomFigure) return null;
  const svg = zoomFigure.querySelector('svg');
  const image = svg.querySelector('image');
  const full = svg.viewBox.baseVal;
  const W = full.width;
  const H = full.height;
  const MAX = 8;
  let view = { x: 0, y: 0, w: W, h: H };
  const label = document.createElement('output');
  const apply = () => {
    view.w = Math.min(W, Math.max(W / MAX, view.w));
    view.h = (view.w * H) / W;
    view.x = Math.min(W - view.w, Math.max(0, view.x));
    view.y = Math.min(H - view.h, Math.max(0, view.y));
    svg.setAttribute('viewBox', `${view.x} ${view.y} ${view.w} ${view.h}`);
    const scale = W / view.w;
    label.value = `${Math.round(scale * 100)} %`;
    zoomFigure.dataset.scale = scale.toFixed(2);
    if (scale > 1.5 && image.dataset.zoomHref && image.getAttribute('href') !== image.dataset.zoomHref)
      image.setAttribute('href', image.dataset.zoomHref);
  };
  const zoomAt = (factor, cx = view.x + view.w / 2, cy = view.y + view.h / 2) => {
    const w = Math.min(W, Math.max(W / MAX, view.w / factor));
    const ratio = w / view.w;
    view = { x: cx - (cx - view.x) * ratio, y: cy - (cy - view.y) * ratio, w, h: (w * H) / W };
    apply();
  };
  const toPage = (event) => {
    const point = new DOMPoint(event.clientX, event.clientY).matrixTransform(svg.getScreenCTM().inverse());
    return [point.x, point.y];
  };
  const bar = document.createElement('div');
  bar.className = 'zoom-bar';
  bar.setAttribute('role', 'toolbar');
  bar.setAttribute('aria-label', 'Zoom');
  for (const [text, name, action] of [
    ['+', 'Zoom in', () => zoomAt(1.5)],
    ['−', 'Zoom out', () => zoomAt(1 / 1.5)],
    ['Whole page', 'Whole page', () => zoomAt(0)],
  ]) {
    const button = document.createElement('button');
    button.type = 'button';
    button.className = 'quiet';
    button.textContent = text;
    button.setAttribute('aria-label', name);
    button.addEventListener('click', action);
    bar.append(button);
  }
  bar.append(label);
  zoomFigure.prepend(bar);
  svg.addEventListener(
    'wheel',
    (event) => {
      event.preventDefault();
      zoomAt(event.deltaY < 0 ? 1.25 : 1 / 1.25, ...toPage(event));
    },
    { passive: false },
  );
  let drag = null;
  svg.addEventListener('pointerdown', (event) => {
    drag = { x: event.clientX, y: event.clientY, view: { ...view }, moved: false };
  });
  svg.addEventListener('pointermove', (event) => {
    if (!drag || !(event.buttons & 1)) return;
    const dx = event.clientX - drag.x;
    const dy = event.clientY - drag.y;
    if (!drag.moved && Math.hypot(dx, dy) < 4) return;
    if (!drag.moved) svg.setPointerCapture(event.pointerId);
    drag.moved = true;
    const perPixel = drag.view.w / svg.getBoundingClientRect().width;
    view = { ...drag.view, x: drag.view.x - dx * perPixel, y: drag.view.y - dy * perPixel };
    apply();
  });
  svg.addEventListener('pointerup', () => {
    // A drag is not a click on the outline under it.
    if (drag?.moved) svg.addEventListener('click', (event) => event.preventDefault(), { capture: true, once: true });
    drag = null;
  });
  apply();
  return {
    /** Brings the outline of line `id` into view (centred, at the same zoom) unless it is in view. */
    show(id) {
      const polygon = document.getElementById(`line-${id}`);
      if (!polygon) return;
      const box = polygon.getBBox();
      const inside = box.x >= view.x && box.y >= view.y && box.x + box.width <= view.x + view.w && box.y + box.height <= view.y + view.h;
      if (inside) return;
      view = { ...view, x: box.x + box.width / 2 - view.w / 2, y: box.y + box.height / 2 - view.h / 2 };
      apply();
    },
  };
})();
// Page viewer, the line editor and keyboard: a click on a line (its text or its outline) selects it
// on both sides and keeps both in view; ↑/↓ move between lines. Where the page can be corrected
// (`data-editor`: the save's address), a click on a line's text or Enter edits it in place: Enter
// saves (the portal's POST with the session's CSRF token, answered as JSON) and goes on to the next
// line, Esc cancels. Leaving the page with an unsaved edit asks first.
const lineList = document.querySelector('ol.lines');
if (lineList) {
  const saveUrl = lineList.dataset.editor;
  const items = () => [...lineList.querySelectorAll('li[data-line]')];
  const status = document.createElement('p');
  status.className = 'editor-status';
  status.setAttribute('role', 'status');
  (lineList.closest('.viewer') ?? lineList).before(status);
  for (const help of document.querySelectorAll('.editor-help')) help.hidden = !saveUrl;
  let pending = 0;
  const select = (li, scroll = true) => {
    for (const element of document.querySelectorAll('.selected')) element.classList.remove('selected');
    for (const element of lineParts(li.dataset.line)) element.classList.add('selected');
    // Not while a click is under way: moving the line between its mousedown and mouseup loses the click.
    if (scroll) li.scrollIntoView({ block: 'nearest' });
    zoomer?.show(li.dataset.line);
  };
  const editing = () => lineList.querySelector('input.line-input');
  const dirty = () => {
    const input = editing();
    return pending > 0 || (input !== null && input.value !== input.closest('li').dataset.text);
  };
  const close = (li, focus) => {
    li.querySelector('input.line-input')?.remove();
    const link = li.querySelector('.line-text');
    link.hidden = false;
    if (focus) link.focus();
  };
  const edit = (li) => {
    const open = editing();
    if (open && open.closest('li') !== li) {
      if (open.value !== open.closest('li').dataset.text) {
        status.textContent = 'Save this line (Enter) or cancel (Esc) before editing another.';
        open.focus();
        return;
      }
      close(open.closest('li'), false);
    }
    if (open?.closest('li') === li) return open.focus();
    select(li);
    const link = li.querySelector('.line-text');
    const input = document.createElement('input');
    input.type = 'text';
    input.className = 'line-input';
    input.value = li.dataset.text;
    input.setAttribute('aria-label', `Text of line ${items().indexOf(li) + 1}`);
    link.hidden = true;
    link.after(input);
    input.focus();
    input.setSelectionRange(input.value.length, input.value.length);
  };
  const show = (li, line) => {
    li.dataset.text = line.text;
    const corrected = line.corrected_text !== null && line.corrected_text !== line.machine_text;
    li.classList.toggle('corrected', corrected);
    document.getElementById(`line-${li.dataset.line}`)?.classList.toggle('corrected', corrected);
    li.querySelector('.line-text').textContent = line.text;
    li.querySelector('.was')?.remove();
    if (corrected) {
      const was = document.createElement('span');
      was.className = 'was';
      const badge = document.createElement('span');
      badge.className = 'badge';
      badge.textContent = 'corrected';
      was.append(badge, ` machine reading: ${line.machine_text}`);
      li.querySelector('.line-text').after(was);
    }
  };
  const save = async (li, input) => {
    const next = items()[items().indexOf(li) + 1];
    if (input.value === li.dataset.text) {
      close(li, !next);
      if (next) edit(next);
      return;
    }
    pending++;
    input.readOnly = true;
    status.textContent = 'Saving…';
    try {
      const response = await fetch(saveUrl, {
        method: 'POST',
        credentials: 'same-origin',
        headers: { Accept: 'application/json', 'Content-Type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ _csrf: lineList.dataset.csrf, line: li.dataset.line, text: input.value }),
      });
      const answer = await response.json().catch(() => ({ error: { message: `the server answered ${response.status}` } }));
      if (!response.ok) throw new Error(answer.error?.message ?? `the server answered ${response.status}`);
      show(li, answer.lines[0]);
      input.removeAttribute('aria-invalid');
      close(li, !next);
      status.textContent = `Line ${items().indexOf(li) + 1} saved.`;
      if (next) edit(next);
    } catch (error) {
      input.setAttribute('aria-invalid', 'true');
      status.textContent = `Not saved: ${error.message}`;
      input.focus();
    } finally {
      input.readOnly = false;
      pending--;
    }
  };
  lineList.addEventListener('click', (event) => {
    const link = event.target instanceof Element ? event.target.closest('.line-text') : null;
    if (!link) return;
    event.preventDefault();
    const li = link.closest('li');
    if (saveUrl) edit(li);
    else select(li);
  });
  lineList.addEventListener('keydown', (event) => {
    const li = event.target instanceof Element ? event.target.closest('li[data-line]') : null;
    if (!li) return;
    if (event.target.matches('input.line-input')) {
      if (event.key === 'Enter') {
        event.preventDefault();
        if (!event.target.readOnly) save(li, event.target);
      } else if (event.key === 'Escape') {
        event.preventDefault();
        close(li, true);
        status.textContent = 'Edit cancelled.';
      }
      return;
    }
    if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
      event.preventDefault();
      const all = items();
      const to = all[all.indexOf(li) + (event.key === 'ArrowDown' ? 1 : -1)];
      if (to) {
        to.querySelector('.line-text').focus();
        select(to);
      }
    } else if (event.key === 'Enter' && saveUrl) {
      event.preventDefault();
      edit(li);
    }
  });
  lineList.addEventListener('focusin', (event) => {
    const li = event.target instanceof Element && event.target.matches('.line-text') ? event.target.closest('li') : null;
    if (li) select(li, false);
  });
  // A click on an outline selects its line's text (and edits nothing).
  zoomFigure?.addEventListener('click', (event) => {
    const polygon = event.target instanceof Element ? event.target.closest('polygon[data-line]') : null;
    if (!polygon) return;
    event.preventDefault();
    const li = document.getElementById(`text-${polygon.dataset.line}`);
    if (!li) return;
    select(li);
    li.querySelector('.line-text').focus({ preventScroll: true });
  });
  // Opened from a search result (`?line=…`): the line the page marks selected is brought into view, on the image too.
  const preselected = lineList.querySelector('li.selected[data-line]');
  if (preselected) select(preselected);
  window.addEventListener('beforeunload', (event) => {
    if (!dirty()) return;
    event.preventDefault();
    event.returnValue = '';
  });
}
