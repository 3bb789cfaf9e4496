// Server-rendered HTML with escaping by default: every value interpolated into `html`…`` is
// escaped unless it is itself Html (made by `html`). Nothing reaches a page unescaped otherwise.
import { showBidiControls } from '../shared/bidi-controls.ts';

export class Html {
  readonly value: string;
  constructor(value: string) {
    this.value = value;
  }
  toString(): string {
    return this.value;
  }
}

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"'`=]/g, (c) => `&#${c.charCodeAt(0)};`);
}

type Part = Html | string | number | boolean | null | undefined | readonly Part[];

function render(part: Part): string {
  if (part === null || part === undefined || part === false) return '';
  if (part instanceof Html) return part.value;
  if (Array.isArray(part)) return part.map(render).join('');
  return escapeHtml(String(part));
}

export function html(strings: TemplateStringsArray, ...values: Part[]): Html {
  let out = strings[0];
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1];
  return new Html(out);
}

export interface PageOptions {
  /** The document's title (plain text), and the page's heading unless `heading` is given. */
  title: string;
  /** The heading, where it holds markup (an uploaded name in <bdi>). */
  heading?: Html;
  /** The signed-in user's email and account, for the header; null on signed-out pages. */
  user: { email: string; accountName: string; csrfToken: string } | null;
  /** Which navigation item is current. */
  nav?: 'jobs' | 'models' | 'usage' | 'keys' | 'webhook' | 'account' | 'search';
  body: Html;
}

export function page({ title, heading, user, nav, body }: PageOptions): string {
  const link = (href: string, label: string, name: PageOptions['nav']) =>
    html`<li><a href="${href}"${nav === name ? html` aria-current="page"` : ''}>${label}</a></li>`;
  const header = user
    ? html`<header class="top"><a class="brand" href="/portal/jobs">hwr portal</a>
<nav aria-label="Main"><ul>${link('/portal/jobs', 'Jobs', 'jobs')}${link('/portal/models', 'Models', 'models')}${link('/portal/usage', 'Usage', 'usage')}${link('/portal/settings/keys', 'API keys', 'keys')}${link('/portal/settings/webhook', 'Webhook secret', 'webhook')}${link('/portal/settings/account', 'Account', 'account')}</ul></nav>
${nav === 'search' ? '' : searchBox()}<div class="who"><span>${user.email} · ${user.accountName}</span>
<form method="post" action="/portal/sign-out">${csrfField(user.csrfToken)}<button type="submit">Sign out</button></form></div></header>`
    : html`<header class="top"><span class="brand">hwr portal</span></header>`;
  return `<!doctype html>
${html`<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · hwr</title><link rel="icon" href="data:,"><link rel="stylesheet" href="/portal/static/portal.css"><script src="/portal/static/portal.js" defer></script></head>
<body>${header}<main id="main"><h1>${heading ?? title}</h1>${body}</main></body></html>`}`;
}

/** The header's search box (docs/search.md, "Portal"); the search page has its own form instead. */
const searchBox = (): Html =>
  html`<form class="search-box" role="search" method="get" action="/portal/search"><input type="search" name="q" aria-label="Search your pages" placeholder="Search your pages" maxlength="200" required><button type="submit" class="quiet">Search</button></form>`;

export const csrfField = (token: string): Html => html`<input type="hidden" name="_csrf" value="${token}">`;

/**
 * An uploaded file name as a page shows it: isolated in <bdi>, so that its direction (a Hebrew or
 * Arabic name, or a right-to-left override) cannot reorder the text around it, and with each
 * bidirectional control written visibly (`[U+202E]`), so that an override inside the name cannot
 * disguise it either (`invoice[U+202E]gpj.exe`, not `invoiceexe.jpg`).
 */
export const uploadedName = (name: string): Html => html`<bdi>${showBidiControls(name)}</bdi>`;

export function notice(kind: 'error' | 'warn' | 'ok', text: string | null | undefined): Html {
  if (!text) return html``;
  return html`<p class="notice ${kind}" role="${kind === 'error' ? 'alert' : 'status'}">${text}</p>`;
}

export function time(date: Date | string | null | undefined): Html {
  if (!date) return html`—`;
  const iso = typeof date === 'string' ? date : date.toISOString();
  return html`<time datetime="${iso}">${iso
    .replace('T', ' ')
    .replace(/\.\d+Z$/, ' UTC')
    .replace(/Z$/, ' UTC')}</time>`;
}

/**
 * Text with words marked, as the search gives it (`highlight`: HTML-escaped text with <mark> and
 * </mark> around the matched words), made markup again from its text alone: the marks become
 * <mark class="hit">, everything else is unescaped and escaped anew, so nothing else in it can
 * become markup whatever the string holds.
 */
export function markedText(highlight: string): Html {
  const asText = (text: string) =>
    text.replace(/&(lt|gt|quot|#39|amp);/g, (_, name: string) => ({ lt: '<', gt: '>', quot: '"', '#39': "'", amp: '&' })[name] ?? '');
  let inMark = false;
  const parts: Html[] = [];
  for (const part of highlight.split(/(<mark>|<\/mark>)/)) {
    if (part === '<mark>') inMark = true;
    else if (part === '</mark>') inMark = false;
    else if (part !== '') parts.push(inMark ? html`<mark class="hit">${asText(part)}</mark>` : html`${asText(part)}`);
  }
  return html`${parts}`;
}
