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
// A job's page: while the job is queued or processing, its state, pages and timeline refresh
// themselves every few seconds, as the jobs list does; without script, reload.
const liveJob = document.querySelector('[data-live-job]');
if (liveJob) {
  let current = liveJob;
  const refresh = async () => {
    if (!current.querySelector('.state-queued, .state-processing')) return;
    try {
      const response = await fetch(location.href, { headers: { Accept: 'text/html' }, credentials: 'same-origin' });
      if (response.ok && response.url === location.href) {
        const next = new DOMParser().parseFromString(await response.text(), 'text/html').querySelector('[data-live-job]');
        if (next) {
          const imported = document.importNode(next, true);
          current.replaceWith(imported);
          current = imported;
        }
      }
    } finally {
      setTimeout(refresh, 2000);
    }
  };
  setTimeout(refresh, 2000);
}
// Jobs list: while a job on the page is queued or processing, the table refreshes itself
// every few seconds (the same page fetched again, its rows swapped in); without script, reload.
const live = document.querySelector('table[data-live]');
if (live) {
  const refresh = async () => {
    if (!live.querySelector('.state-queued, .state-processing')) return;
    try {
      const response = await fetch(location.href, { headers: { Accept: 'text/html' }, credentials: 'same-origin' });
      if (response.ok && response.url === location.href) {
        const next = new DOMParser().parseFromString(await response.text(), 'text/html').querySelector('table[data-live] tbody');
        const body = live.querySelector('tbody');
        if (next && body) body.replaceWith(document.importNode(next, true));
      }
    } finally {
      setTimeout(refresh, 2000);
    }
  };
  setTimeout(refresh, 2000);
}
