import type Router from '@koa/router';
import { pingDatabase } from '../../db/database.ts';
import type { Runtime } from '../../runtime/runtime.ts';

/** Liveness (the process answers) and readiness (the database answers); no key needed. */
export function registerHealth(router: Router, runtime: Runtime): void {
  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  router.get('/readyz', async (ctx) => {
    try {
      await pingDatabase(runtime.db.pool);
      ctx.body = { status: 'ready' };
    } catch {
      ctx.status = 503;
      ctx.body = { status: 'unavailable', detail: 'the database does not answer' };
    }
  });
}
