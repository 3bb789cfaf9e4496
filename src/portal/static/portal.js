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
// While the page shows a queued or processing job, the part `selector` finds refreshes itself
// every 2 seconds (the same page fetched again, that part swapped in); without script, reload.
// The jobs list swaps its rows in, a job's page its state, pages and timeline.
const keepLive = (selector) => {
  const refresh = async () => {
    const current = document.querySelector(selector);
    if (!current?.querySelector('.state-queued, .state-processing')) return;
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
