// RFC 9457 problem+json errors. Every error a client can cause has a stable `code`, and every
// code its status and retryability from one catalog: the HTTP layer's own below, the domain's
// rejections (domain/rejections.ts), the submission's (src/use-cases/errors.ts), the upload's
// (src/intake/intake-error.ts) and the webhook address's (src/callbacks/webhook-url.ts).
// docs/contract.md, "Error codes", lists them all.
import type { Context, Next } from 'koa';
import { CodedError, type ErrorCatalog, type ErrorShape, type ErrorSpec, isCodedError } from '../../domain/errors.ts';
import { REJECTION_ERRORS, type RejectionCode } from '../../domain/rejections.ts';
import { INTAKE_ERRORS } from '../intake/intake-error.ts';
import { OUTAGE_NAMES, outageOf } from '../outage/outage.ts';
import type { Logger } from '../platform/logger.ts';

/** The codes the HTTP layer answers with itself, each with its status on purpose. */
export const HTTP_PROBLEMS = {
  /** A body the parser or router refused; the answer keeps the 4xx it gave (400 when it gave none). */
  bad_request: { status: 400, retryable: false, title: 'Bad request' },
  invalid_date: { status: 400, retryable: false, title: 'Invalid input' },
  invalid_idempotency_key: { status: 400, retryable: false, title: 'Invalid input' },
  invalid_llm_tier: { status: 400, retryable: false, title: 'Invalid input' },
  invalid_multipart: { status: 400, retryable: false, title: 'Invalid multipart body' },
  invalid_pdf_format: { status: 400, retryable: false, title: 'Invalid input' },
  invalid_pipeline_steps: { status: 400, retryable: false, title: 'Invalid input' },
  invalid_preset: { status: 400, retryable: false, title: 'Invalid input' },
  missing_scan_zip: { status: 400, retryable: false, title: 'Invalid input' },
  /** A submission's form field that is not one of its options (a typo such as `pipline_steps`). */
  unknown_field: { status: 400, retryable: false, title: 'Invalid input' },
  /** A IIIF image request that is malformed or asks for the impossible (docs/iiif.md). */
  invalid_iiif_request: { status: 400, retryable: false, title: 'Invalid IIIF request' },
  /** GET /v1/search with no query, one too long, or a bad fuzzy, job_id, limit or cursor (docs/search.md). */
  invalid_search_request: { status: 400, retryable: false, title: 'Invalid input' },
  missing_api_key: { status: 401, retryable: false, title: 'Unauthorized' },
  /** A signed IIIF URL that is malformed, expired, forged, or whose key was revoked (docs/iiif.md). */
  invalid_iiif_token: { status: 401, retryable: false, title: 'Unauthorized' },
  invalid_api_key: { status: 401, retryable: false, title: 'Unauthorized' },
  not_found: { status: 404, retryable: false, title: 'Not found' },
  method_not_allowed: { status: 405, retryable: false, title: 'Method not allowed' },
  /** The connection guard's answer to a body slower than MIN_BODY_BYTES_PER_SECOND (connection-guards.ts). */
  request_body_too_slow: { status: 408, retryable: true, title: 'Request Timeout' },
  /** The result of a job that failed: there never will be one. */
  job_failed: { status: 409, retryable: false, title: 'Result not available' },
  result_expired: { status: 410, retryable: false, title: 'Result expired' },
  unsupported_media_type: { status: 415, retryable: false, title: 'Unsupported media type' },
  /** The API key's request rate is spent (rate-limit.ts); Retry-After says when a request goes through again. */
  rate_limited: { status: 429, retryable: true, title: 'Too many requests' },
  internal_error: { status: 500, retryable: true, title: 'Internal server error' },
  /** A IIIF image request for a feature the service does not offer (arbitrary rotation, bitonal, a format other than jpg/png). */
  iiif_feature_not_supported: { status: 501, retryable: false, title: 'Not implemented' },
  insufficient_storage: { status: 503, retryable: true, title: 'Service unavailable' },
  /** The database could not be reached or went away under the request (a restart, a failover, a partition). */
  database_unavailable: { status: 503, retryable: true, title: 'Service unavailable' },
  /** The blob store (S3) could not be reached or failed under the request (a restart, a partition, throttling). */
  storage_unavailable: { status: 503, retryable: true, title: 'Service unavailable' },
} as const satisfies ErrorCatalog<string, number>;

/** Retry-After of a `database_unavailable` or `storage_unavailable` answer: a restart or failover takes seconds. */
export const DATABASE_RETRY_AFTER_SECONDS = 5;

export type HttpProblemCode = keyof typeof HTTP_PROBLEMS;

/** Titles by status for codes whose catalog names none (the domain's rejections). */
const STATUS_TITLES: Readonly<Record<number, string>> = { 404: 'Not found', 409: 'Request conflicts with the job state' };

/** What an error answer says: the boundary error's shape, with its problem+json members. */
export interface ProblemAnswer extends ErrorShape {
  readonly status: number;
  readonly title: string;
  readonly detail: string;
  readonly headers: Readonly<Record<string, string>>;
}

type AnswerCode = HttpProblemCode | RejectionCode;

/** An error answer thrown by the HTTP layer: its code's status and retryability come from its catalog. */
export class HttpProblem extends CodedError<AnswerCode, number> implements ProblemAnswer {
  readonly title: string;
  readonly detail: string;
  readonly headers: Record<string, string>;

  constructor(code: AnswerCode, detail: string, options: { title?: string; headers?: Record<string, string>; setting?: string } = {}) {
    const spec: ErrorSpec<number> =
      code in HTTP_PROBLEMS ? HTTP_PROBLEMS[code as HttpProblemCode] : REJECTION_ERRORS[code as RejectionCode];
    super(code, spec, detail, { setting: options.setting });
    this.name = 'HttpProblem';
    this.title = options.title ?? spec.title ?? titleForStatus(spec.status);
    this.detail = detail;
    this.headers = options.headers ?? {};
  }
}

export const problemType = (code: string): string => `urn:hwr:problem:${code}`;

/** The problem+json body of an answer; `requestId` becomes `instance`. */
export function problemBody(problem: ProblemAnswer, requestId?: string): Record<string, unknown> {
  return {
    type: problemType(problem.code),
    title: problem.title,
    status: problem.status,
    detail: problem.detail,
    code: problem.code,
    retryable: problem.retryable,
    ...(requestId === undefined ? {} : { instance: `urn:hwr:request:${requestId}` }),
  };
}

/** The answer for a thrown error: any boundary error with an HTTP status, a client error of koa's; null otherwise (a 500). */
export function toProblem(error: unknown): ProblemAnswer | null {
  if (error instanceof HttpProblem) return error;
  if (isCodedError(error) && error.status !== null) return answer(error as CodedError<string, number>, error.status);
  const status = (error as { status?: number; httpCode?: number }).status ?? (error as { httpCode?: number }).httpCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    const spec = status === 413 ? INTAKE_ERRORS.upload_too_large : HTTP_PROBLEMS.bad_request;
    return {
      code: status === 413 ? 'upload_too_large' : 'bad_request',
      message: (error as Error).message,
      detail: (error as Error).message,
      status,
      retryable: spec.retryable,
      title: spec.title,
      headers: {},
    };
  }
  return null;
}

function answer(error: CodedError<string, number>, status: number): ProblemAnswer {
  const { title, retryAfterSeconds } = error as { title?: unknown; retryAfterSeconds?: unknown };
  return {
    code: error.code,
    message: error.message,
    detail: error.message,
    status,
    retryable: error.retryable,
    title: typeof title === 'string' ? title : titleForStatus(status),
    // A refusal for the moment may say when to come back (an account limit).
    headers: typeof retryAfterSeconds === 'number' ? { 'Retry-After': String(retryAfterSeconds) } : {},
  };
}

function titleForStatus(status: number): string {
  return STATUS_TITLES[status] ?? 'Error';
}

/**
 * A refusal set by a server setting (MAX_PAGES, WEBHOOK_ALLOW_PRIVATE…) names it to the operator,
 * in the request's log line: the answer's detail, which the client reads, says the limit in its
 * own words (docs/contract.md, "Error codes").
 */
export function logRefusalSetting(log: Logger | undefined, error: unknown): void {
  if (!isCodedError(error) || error.setting === undefined) return;
  log?.info(
    { code: error.code, status: error.status, setting: error.setting },
    `request refused under the server setting ${error.setting}`,
  );
}

/** Turns every thrown error into problem+json; unexpected ones into a 500 that hides internals. */
export async function problemMiddleware(ctx: Context, next: Next): Promise<void> {
  try {
    await next();
    if (ctx.status === 404 && ctx.body === undefined) throw new HttpProblem('not_found', `No route for ${ctx.method} ${ctx.path}`);
    if (ctx.status === 405 && ctx.body === undefined)
      throw new HttpProblem('method_not_allowed', `${ctx.method} is not allowed on ${ctx.path}`);
  } catch (error) {
    let problem = toProblem(error);
    if (problem) logRefusalSetting(ctx.state.log, error);
    const outage = problem ? null : outageOf(error);
    if (outage) {
      ctx.state.log?.warn({ err: error }, `request failed: the ${OUTAGE_NAMES[outage]} is unavailable`);
      problem = new HttpProblem(
        `${outage}_unavailable`,
        `The service cannot reach its ${OUTAGE_NAMES[outage]} at the moment; it is safe to retry.`,
        { headers: { 'Retry-After': String(DATABASE_RETRY_AFTER_SECONDS) } },
      );
    }
    if (!problem) {
      ctx.state.log?.error({ err: error }, 'request failed');
      problem = new HttpProblem('internal_error', 'The request failed on our side; it is safe to retry.');
    }
    ctx.status = problem.status;
    ctx.set(problem.headers);
    ctx.type = 'application/problem+json';
    ctx.body = problemBody(problem, ctx.state.requestId ?? 'unknown');
  }
}
