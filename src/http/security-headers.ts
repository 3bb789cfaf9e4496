// Response headers every answer carries: no MIME sniffing of our JSON, XML and ZIPs, and, when
// the service is reached over TLS, HSTS so a browser (the portal) never falls back to http.
import type { Context, Next } from 'koa';

const ONE_YEAR_SECONDS = 365 * 24 * 3600;

export function securityHeaders(https: boolean) {
  return async (ctx: Context, next: Next): Promise<void> => {
    ctx.set('X-Content-Type-Options', 'nosniff');
    if (https) ctx.set('Strict-Transport-Security', `max-age=${ONE_YEAR_SECONDS}`);
    await next();
  };
}
