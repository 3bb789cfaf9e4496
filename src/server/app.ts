// The koa application: request ids, problem+json errors, authentication, routes.
import Router from '@koa/router';
import Koa from 'koa';
import { httpMetrics } from '../http/http-metrics.ts';
import { portal } from '../portal/portal.ts';
import type { Runtime } from '../runtime/runtime.ts';
import { authenticate } from '../http/authenticate.ts';
import { openApiDocument } from '../http/openapi.ts';
import { problemMiddleware } from '../http/problem.ts';
import { requestContext } from '../http/request-context.ts';
import { securityHeaders } from '../http/security-headers.ts';
import { registerHealth } from '../http/routes/health.ts';
import { registerIiifRoutes } from '../http/routes/iiif.ts';
import { registerJobRoutes } from '../http/routes/jobs.ts';
import { registerModelRoutes } from '../http/routes/models.ts';
import { registerPageRoutes } from '../http/routes/pages.ts';
import { registerSubmitScan } from '../http/routes/submit-scan.ts';
import { registerSearch } from '../http/routes/search.ts';
import { registerUsage } from '../http/routes/usage.ts';

export function createApp(runtime: Runtime): Koa {
  const app = new Koa();
  // X-Forwarded-For/-Proto are believed only when an operator says a proxy sets them, and then
  // only the address the proxy itself added (the last): most proxies append to the header the
  // client sent, so its first entry is whatever the client wrote.
  app.proxy = runtime.config.http.trustProxy;
  app.maxIpsCount = 1;
  app.silent = true;
  const router = new Router();
  const auth = authenticate(runtime.db.pool, runtime.config.limits.rateLimit);
  registerHealth(router, runtime);
  const document = openApiDocument(runtime.config.baseUrl);
  router.get('/v1/openapi.json', (ctx) => {
    ctx.body = document;
  });
  registerSubmitScan(router, runtime, auth);
  registerJobRoutes(router, runtime, auth);
  registerUsage(router, runtime, auth);
  registerModelRoutes(router, runtime, auth);
  registerPageRoutes(router, runtime, auth);
  registerIiifRoutes(router, runtime, auth);
  registerSearch(router, runtime, auth);
  app.use(httpMetrics());
  app.use(securityHeaders(runtime.config.tls !== null || runtime.config.baseUrl.startsWith('https:')));
  app.use(requestContext(runtime.log));
  app.use(problemMiddleware);
  // The customer portal: `/` and `/portal…` (docs/portal.md); it renders its own error pages.
  app.use(portal(runtime));
  app.use(router.routes());
  app.use(router.allowedMethods({ throw: false }));
  return app;
}
