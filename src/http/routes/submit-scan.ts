// POST /v1/process-scan: an API key's scan upload becomes a queued job (http/scan-upload.ts).
import type Router from '@koa/router';
import type { Runtime } from '../../runtime/runtime.ts';
import type { Authenticate } from '../authenticate.ts';
import { receiveScanUpload } from '../scan-upload.ts';

export function registerSubmitScan(router: Router, runtime: Runtime, authenticate: Authenticate): void {
  router.post('/v1/process-scan', authenticate, ...receiveScanUpload(runtime));
}
