// RFC 9457 problem+json errors. Every error a client can cause has a stable `code`.
import type { Context, Next } from 'koa';
import { Rejection, type RejectionCode } from '../../domain/rejections.ts';
import { isIntakeError } from '../intake/intake-error.ts';
import { isWebhookUrlError } from '../callbacks/webhook-url.ts';

export class HttpProblem extends Error {
  readonly status: number;
  readonly code: string;
  readonly title: string;
  readonly detail: string;
  readonly headers: Record<string, string>;

  constructor(status: number, code: string, title: string, detail: string, headers: Record<string, string> = {}) {
    super(detail);
    this.name = 'HttpProblem';
    this.status = status;
    this.code = code;
    this.title = title;
    this.detail = detail;
    this.headers = headers;
  }
}

export const problemType = (code: string): string => `urn:hwr:problem:${code}`;

/** Every rejection code's HTTP status, chosen on purpose (docs/contract.md, "Rejection codes"). */
export const REJECTION_STATUS: Record<RejectionCode, 404 | 409> = {
  job_not_found: 404,
  job_already_exists: 409,
  job_already_finished: 409,
  job_cancelled: 409,
  job_not_started: 409,
  job_not_done: 409,
  pages_incomplete: 409,
  unknown_page: 404,
  result_not_expired: 409,
  no_callback: 409,
  account_not_found: 404,
  account_already_exists: 409,
  key_not_found: 404,
  key_already_exists: 409,
  user_not_found: 404,
  user_already_exists: 409,
  invite_not_found: 404,
  invite_used: 409,
  invite_expired: 409,
};

export function toProblem(error: unknown): HttpProblem | null {
  if (error instanceof HttpProblem) return error;
  if (isIntakeError(error)) return new HttpProblem(error.status, error.code, error.title, error.detail);
  if (isWebhookUrlError(error)) return new HttpProblem(400, error.code, 'Invalid webhook_url', error.message);
  if (error instanceof Rejection) {
    const status = REJECTION_STATUS[error.code];
    return new HttpProblem(status, error.code, status === 404 ? 'Not found' : 'Request conflicts with the job state', error.message);
  }
  const status = (error as { status?: number; httpCode?: number }).status ?? (error as { httpCode?: number }).httpCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return new HttpProblem(
      status,
      status === 413 ? 'upload_too_large' : 'bad_request',
      status === 413 ? 'Upload too large' : 'Bad request',
      (error as Error).message,
    );
  }
  return null;
}

/** Turns every thrown error into problem+json; unexpected ones into a 500 that hides internals. */
export async function problemMiddleware(ctx: Context, next: Next): Promise<void> {
  try {
    await next();
    if (ctx.status === 404 && ctx.body === undefined)
      throw new HttpProblem(404, 'not_found', 'Not found', `No route for ${ctx.method} ${ctx.path}`);
    if (ctx.status === 405 && ctx.body === undefined)
      throw new HttpProblem(405, 'method_not_allowed', 'Method not allowed', `${ctx.method} is not allowed on ${ctx.path}`);
  } catch (error) {
    let problem = toProblem(error);
    if (!problem) {
      ctx.state.log?.error({ err: error }, 'request failed');
      problem = new HttpProblem(500, 'internal_error', 'Internal server error', 'The request failed on our side; it is safe to retry.');
    }
    ctx.status = problem.status;
    ctx.set(problem.headers);
    ctx.type = 'application/problem+json';
    ctx.body = {
      type: problemType(problem.code),
      title: problem.title,
      status: problem.status,
      detail: problem.detail,
      code: problem.code,
      instance: `urn:hwr:request:${ctx.state.requestId ?? 'unknown'}`,
    };
  }
}
