// What the portal hands each group of pages (keys, jobs, viewer, account, new job): the runtime,
// the cookie names, the signed-in session guard, the page renderer and the flash that carries a
// form's outcome across its redirect. Its own module so the page modules and portal.ts, which
// registers them, do not import each other.
import type { Context } from 'koa';
import type { Runtime } from '../runtime/runtime.ts';
import type { Flash } from './flash.ts';
import type { Html, PageOptions } from './html.ts';
import type { Session } from './sessions.ts';
import type { CookieNames } from './web.ts';

export interface PortalContext {
  runtime: Runtime;
  names: CookieNames;
  /** The signed-in session, or a redirect to the sign-in page (GET) / 403 (other methods). */
  requireSession(ctx: Context): Promise<Session>;
  /** Reads the form of a signed-in POST and checks its CSRF token. */
  signedInForm(ctx: Context, session: Session): Promise<URLSearchParams>;
  /** A page; `heading` where the heading holds markup that the plain-text title cannot. */
  render(ctx: Context, title: string, body: Html, session: Session | null, nav?: PageOptions['nav'], status?: number, heading?: Html): void;
  /**
   * The answer to every form's POST (Post/Redirect/Get): 303 to `location`, whose page shows
   * `flash` once. Bound to this browser's session cookie, or to `owner` (a cookie value: the new
   * session's after a password change, the CSRF cookie's on the signed-out forms).
   */
  redirectWithFlash(ctx: Context, location: string, flash: Flash, owner?: string): Promise<void>;
  /**
   * On a GET, what the form before left for this page (taken: shown once), with its Retry-After
   * set; `owner` as above. Empty otherwise.
   */
  takeFlash(ctx: Context, owner?: string): Promise<Flash>;
}
