// Progressive enhancement only: every page works without this file.
// - [data-copy="ID"] buttons copy the text of the element ID to the clipboard.
// - forms with data-confirm="question" ask before submitting.
document.addEventListener('click', (event) => {
  const button = event.target instanceof Element ? event.target.closest('[data-copy]') : null;
  if (!button) return;
  const source = document.getElementById(button.getAttribute('data-copy') || '');
  if (!source || !navigator.clipboard) return;
  navigator.clipboard.writeText(source.textContent.trim()).then(() => {
    button.textContent = 'Copied';
  }, () => {
    button.textContent = 'Copy failed: select the text';
  });
});
document.addEventListener('submit', (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement) || !form.dataset.confirm) return;
  if (!window.confirm(form.dataset.confirm)) event.preventDefault();
});
for (const button of document.querySelectorAll('[data-copy][hidden]')) button.hidden = false;
