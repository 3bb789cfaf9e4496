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
