import type Router from '@koa/router';
import { MAX_QUERY_LENGTH, MAX_SEARCH_LIMIT, searchAccount, validCursor } from '../../use-cases/search.ts';
import type { Runtime } from '../../runtime/runtime.ts';
import type { AuthContext, Authenticate } from '../authenticate.ts';
import { HttpProblem } from '../problem.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * GET /v1/search?q=…[&fuzzy=0|1|2][&job_id=…][&limit=…][&cursor=…]: the calling account's lines
 * that match, best first (docs/search.md).
 */
export function registerSearch(router: Router, runtime: Runtime, authenticate: Authenticate): void {
  router.get('/v1/search', authenticate, async (ctx) => {
    const auth = ctx.state.auth as AuthContext;
    const single = (name: string): string | undefined => {
      const value = ctx.query[name];
      if (Array.isArray(value)) throw new HttpProblem('invalid_search_request', `${name} is given more than once.`);
      return value;
    };
    const q = (single('q') ?? '').trim();
    if (q === '') throw new HttpProblem('invalid_search_request', 'q (the words to find) is required.');
    if ([...q].length > MAX_QUERY_LENGTH)
      throw new HttpProblem('invalid_search_request', `q is longer than ${MAX_QUERY_LENGTH} characters.`);
    if (/[\u0000-\u001f\u007f]/.test(q)) throw new HttpProblem('invalid_search_request', 'q has control characters.');
    const fuzzyText = single('fuzzy') ?? '0';
    if (!['0', '1', '2'].includes(fuzzyText)) throw new HttpProblem('invalid_search_request', 'fuzzy must be 0, 1 or 2.');
    const jobId = single('job_id') ?? null;
    if (jobId !== null && !UUID.test(jobId)) throw new HttpProblem('invalid_search_request', 'job_id must be a job id (a UUID).');
    const limitText = single('limit') ?? '20';
    const limit = /^\d{1,3}$/.test(limitText) ? Number(limitText) : Number.NaN;
    if (!(limit >= 1 && limit <= MAX_SEARCH_LIMIT))
      throw new HttpProblem('invalid_search_request', `limit must be 1 to ${MAX_SEARCH_LIMIT}.`);
    const cursor = single('cursor') ?? null;
    if (cursor !== null && !validCursor(cursor)) throw new HttpProblem('invalid_search_request', 'cursor is not one this API gave.');
    ctx.body = await searchAccount(runtime.db, auth.accountId, {
      q,
      fuzzy: Number(fuzzyText) as 0 | 1 | 2,
      jobId: jobId?.toLowerCase() ?? null,
      limit,
      cursor,
    });
  });
}
