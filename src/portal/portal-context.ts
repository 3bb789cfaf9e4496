// What the portal hands each group of pages (keys, jobs, viewer, account, new job): the runtime,
// the cookie names, the signed-in session guard and the page renderer. Its own module so the page
// modules and portal.ts, which registers them, do not import each other.
import type { Context } from 'koa';
import type { Runtime } from '../runtime/runtime.ts';
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
  render(ctx: Context, title: string, body: Html, session: Session | null, nav?: PageOptions['nav'], status?: number): void;
}
