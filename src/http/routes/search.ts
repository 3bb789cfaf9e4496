import type Router from '@koa/router';
import { searchAccount, searchParamsOf, SearchRequestError } from '../../use-cases/search.ts';
import type { Runtime } from '../../runtime/runtime.ts';
import type { AuthContext, Authenticate } from '../authenticate.ts';
import { HttpProblem } from '../problem.ts';

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
    let params: ReturnType<typeof searchParamsOf>;
    try {
      params = searchParamsOf({
        q: single('q'),
        fuzzy: single('fuzzy'),
        job_id: single('job_id'),
        limit: single('limit'),
        cursor: single('cursor'),
      });
    } catch (error) {
      if (error instanceof SearchRequestError) throw new HttpProblem('invalid_search_request', error.message);
      throw error;
    }
    ctx.body = await searchAccount(runtime.db, auth.accountId, params);
  });
}
