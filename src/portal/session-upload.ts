// The API's upload handling (http/scan-upload.ts, http/training-upload.ts) run for a portal form:
// authenticated by the portal session, under the API's request rate per user (as per key: uploads
// are the costly requests), refused unread past it. Each caller gets its own limiter.
import type { Context, Middleware } from 'koa';
import type { AuthContext } from '../http/authenticate.ts';
import { RateLimiter } from '../http/rate-limit.ts';
import type { Runtime } from '../runtime/runtime.ts';
import type { Session } from './sessions.ts';

/** Runs `handlers` (the API's upload middleware) after the session's authentication and rate check. */
export function sessionUpload(runtime: Runtime, handlers: readonly Middleware[]): (ctx: Context) => Promise<unknown> {
  const limiter = new RateLimiter(runtime.config.limits.rateLimit);
  const sessionAuth: Middleware = async (ctx, next) => {
    const session = ctx.state.portalSession as Session;
    const wait = limiter.take(`user:${session.userId}`);
    if (wait > 0) {
      ctx.set('Connection', 'close');
      throw limiter.refusal(wait, 'You');
    }
    const auth: AuthContext = { accountId: session.accountId, keyId: '', actor: `user:${session.userId}` };
    ctx.state.auth = auth;
    await next();
  };
  const chain = [sessionAuth, ...handlers];
  const run = (ctx: Context, index = 0): Promise<unknown> =>
    index === chain.length ? Promise.resolve() : Promise.resolve(chain[index](ctx, () => run(ctx, index + 1)));
  return (ctx) => run(ctx);
}
