// Counts and times every HTTP request by method, route pattern and status, once its response
// has ended (a download's body included) or its connection closed.
import type { Context, Next } from 'koa';
import { httpRequestDuration, httpRequests } from '../metrics/metrics.ts';

export function httpMetrics() {
  return async (ctx: Context, next: Next): Promise<void> => {
    const started = performance.now();
    ctx.res.once('close', () => {
      // @koa/router sets _matchedRoute to the pattern (`/v1/process-scan/:jobId`): no ids in labels.
      const route = (ctx as Context & { _matchedRoute?: string })._matchedRoute ?? 'unmatched';
      const labels = { method: ctx.method, route: String(route), status: String(ctx.res.statusCode) };
      httpRequests.inc(labels);
      httpRequestDuration.observe(labels, (performance.now() - started) / 1000);
    });
    await next();
  };
}
