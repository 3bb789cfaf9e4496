// A request id for every request (X-Request-Id in and out, in logs and in problem+json).
import { randomUUID } from 'node:crypto';
import type { Context, Next } from 'koa';
import type { Logger } from '../platform/logger.ts';

export function requestContext(log: Logger) {
  return async (ctx: Context, next: Next): Promise<void> => {
    const incoming = ctx.get('X-Request-Id');
    const requestId = /^[\w.-]{8,128}$/.test(incoming) ? incoming : randomUUID();
    ctx.state.requestId = requestId;
    ctx.state.log = log.child({ request_id: requestId });
    ctx.set('X-Request-Id', requestId);
    const started = performance.now();
    try {
      await next();
    } finally {
      const level = ctx.status >= 500 ? 'error' : 'debug';
      ctx.state.log[level](
        {
          method: ctx.method,
          path: ctx.path,
          status: ctx.status,
          ms: Math.round(performance.now() - started),
          account_id: ctx.state.auth?.accountId,
        },
        'request',
      );
    }
  };
}
