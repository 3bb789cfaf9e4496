// A small JSON request body (a page's corrections, a training's choice of pages): read up to a
// limit, parsed; the caller checks its shape. Not JSON, too large, or not sent as
// application/json: the caller's own refusal (`refuse`), so each route answers with its code.
import type { Context } from 'koa';
import { HttpProblem } from './problem.ts';

/** The largest JSON body these routes read (1,000 lines of 2,000 characters fit). */
export const MAX_JSON_BODY_BYTES = 8 * 1024 * 1024;

/**
 * The request's JSON body. `optional`: an empty body is `undefined` (else refused). A body that
 * is not `application/json`: 415 unsupported_media_type; too large or not JSON: `refuse(why)`.
 */
export async function readJsonBody(ctx: Context, refuse: (why: string) => Error, options: { optional?: boolean } = {}): Promise<unknown> {
  const declared = Number(ctx.get('Content-Length') || 0);
  const hasBody = declared > 0 || ctx.get('Transfer-Encoding') !== '';
  if (!hasBody) {
    if (options.optional) return undefined;
    throw refuse('the body is empty');
  }
  if (!ctx.is('application/json')) {
    ctx.set('Connection', 'close');
    throw new HttpProblem('unsupported_media_type', 'The body must be JSON, sent as Content-Type: application/json.');
  }
  if (declared > MAX_JSON_BODY_BYTES) {
    ctx.set('Connection', 'close');
    throw refuse(`the body is over ${MAX_JSON_BODY_BYTES / 1024 / 1024} MiB`);
  }
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
    bytes += chunk.length;
    if (bytes > MAX_JSON_BODY_BYTES) {
      ctx.set('Connection', 'close');
      throw refuse(`the body is over ${MAX_JSON_BODY_BYTES / 1024 / 1024} MiB`);
    }
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') {
    if (options.optional) return undefined;
    throw refuse('the body is empty');
  }
  try {
    return JSON.parse(text);
  } catch {
    throw refuse('the body is not JSON');
  }
}
