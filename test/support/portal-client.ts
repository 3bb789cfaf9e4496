// A browser stand-in for the portal over real HTTP: a cookie jar, forms with their CSRF token
// read from the page, redirects not followed (tests look at them).
import { inviteUser } from '../../src/use-cases/users.ts';
import type { Runtime } from '../../src/runtime/runtime.ts';

export interface PortalResponse {
  status: number;
  headers: Headers;
  text: string;
}

export class PortalClient {
  readonly baseUrl: string;
  readonly cookies = new Map<string, string>();
  readonly headers: Record<string, string>;

  constructor(baseUrl: string, headers: Record<string, string> = {}) {
    this.baseUrl = baseUrl;
    this.headers = headers;
  }

  async request(method: string, path: string, form?: Record<string, string>): Promise<PortalResponse> {
    const headers: Record<string, string> = { ...this.headers };
    if (this.cookies.size) headers.Cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    let body: string | undefined;
    if (form) {
      headers['Content-Type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(form).toString();
    }
    const response = await fetch(`${this.baseUrl}${path}`, { method, headers, body, redirect: 'manual' });
    for (const cookie of response.headers.getSetCookie()) {
      const [pair, ...attributes] = cookie.split(';');
      const index = pair.indexOf('=');
      const name = pair.slice(0, index).trim();
      const value = pair.slice(index + 1).trim();
      if (value === '' || attributes.some((a) => /^\s*max-age=0\s*$/i.test(a))) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return { status: response.status, headers: response.headers, text: await response.text() };
  }

  get(path: string): Promise<PortalResponse> {
    return this.request('GET', path);
  }

  /** GETs `pagePath`, takes the CSRF token of its form posting to `action`, and posts `fields` with it. */
  async submit(pagePath: string, action: string, fields: Record<string, string>): Promise<PortalResponse> {
    const page = await this.get(pagePath);
    return this.post(action, { _csrf: csrfTokenOf(page.text, action), ...fields });
  }

  post(path: string, form: Record<string, string>): Promise<PortalResponse> {
    return this.request('POST', path, form);
  }

  async signIn(email: string, password: string): Promise<PortalResponse> {
    return this.submit('/portal/sign-in', '/portal/sign-in', { email, password });
  }
}

/** The _csrf value of the form whose action is `action`. */
export function csrfTokenOf(html: string, action: string): string {
  const forms = html.split('<form').slice(1);
  const form = forms.find((f) => f.includes(`action="${action}"`));
  if (!form) throw new Error(`no form posting to ${action} in:\n${html}`);
  const match = /name="_csrf" value="([^"]+)"/.exec(form);
  if (!match) throw new Error(`no _csrf in the form posting to ${action}`);
  return match[1];
}

export const TEST_PASSWORD = 'correct horse battery staple';

/** Invites `email` to `accountName` and sets its password through the setup link; a signed-in client. */
export async function portalUser(
  runtime: Runtime,
  baseUrl: string,
  accountName: string,
  email: string,
  password = TEST_PASSWORD,
  headers: Record<string, string> = {},
): Promise<PortalClient> {
  const invitation = await inviteUser(runtime.bus, accountName, email, baseUrl, 'test');
  const client = new PortalClient(baseUrl, headers);
  const setupPath = invitation.url.slice(baseUrl.length);
  const set = await client.submit(setupPath, '/portal/setup', {
    token: new URL(invitation.url).searchParams.get('token')!,
    password,
    password2: password,
  });
  // Post/Redirect/Get: the password set, the form answers 303 to the sign-in page.
  if (set.status !== 303 && set.status !== 200) throw new Error(`setup answered ${set.status}: ${set.text}`);
  const signedIn = await client.signIn(email, password);
  if (signedIn.status !== 303) throw new Error(`sign-in answered ${signedIn.status}: ${signedIn.text}`);
  return client;
}
