// Webhook URLs often carry a token (`?token=…`, `https://user:pass@…`). Logs show them with the
// query string, the fragment and the user info replaced; the events keep the URL whole, since the
// callback worker sends to it (docs/callbacks.md, "Webhook URLs in logs and events").

/** `https://[redacted]@host:port/path?[redacted]#[redacted]`; idempotent. The path is kept. */
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
  return `${url.protocol}//${userinfo}${url.host}${url.pathname}${query}${fragment}`;
}
