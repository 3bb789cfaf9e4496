// Path parameters the routes share.
import type { Context } from 'koa';
import { isUuid } from '../shared/uuid.ts';

/** The job id of the path, lower-cased, or null when it is not a UUID (no such job). */
export function jobIdParam(ctx: Context): string | null {
  const jobId = String(ctx.params.jobId);
  return isUuid(jobId) ? jobId.toLowerCase() : null;
}
