// Webhook URLs often carry a token (`?token=…`, `https://user:pass@…`, or a path segment as in
// Slack's and Discord's `/services/T…/B…/<token>`). Logs show them with the query string, the
// fragment, the user info and token-like path segments replaced; the events keep the URL whole,
// since the callback worker sends to it (docs/callbacks.md, "Webhook URLs in logs and events").

/**
 * `https://[redacted]@host:port/path/[redacted]?[redacted]#[redacted]`; idempotent. Path segments
 * that read as words or short ids are kept, so an operator can still tell the receivers apart.
 */
export function redactUrl(raw: unknown): string {
  if (typeof raw !== 'string') return '[redacted]';
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return '[redacted: not a URL]';
  }
  const userinfo = url.username !== '' || url.password !== '' ? '[redacted]@' : '';
  const query = url.search !== '' ? '?[redacted]' : '';
  const fragment = url.hash !== '' ? '#[redacted]' : '';
  const pathname = url.pathname
    .split('/')
    .map((segment) => (looksLikeToken(segment) ? '[redacted]' : segment))
    .join('/');
  return `${url.protocol}//${userinfo}${url.host}${pathname}${query}${fragment}`;
}

/**
 * A path segment that may be a secret: 24 or more URL-safe characters, or 16 or more that mix
 * letters and digits (tokens, UUIDs, hashes). Words (`notifications-handler`) and short or
 * all-digit ids (Slack's `T0001`, Discord's 18-digit webhook id) are not.
 */
function looksLikeToken(segment: string): boolean {
  if (!/^[\w.~%-]+$/.test(segment)) return false;
  if (segment.length >= 24) return true;
  return segment.length >= 16 && /\d/.test(segment) && /[a-z]/i.test(segment);
}
