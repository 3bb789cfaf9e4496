// A real worker process for crash tests: `node test/support/worker-process.ts`
// with HWR_* settings in the environment (DATABASE_URL, DATA_DIR, STEP_MS).
// Prints `page-start <job> <page>` when it begins a page and `ready` once started.
import { loadConfig } from '../../src/platform/config.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { startRuntime } from '../../src/runtime/runtime.ts';
import { testExportPipeline, testPagePipeline } from './test-pipelines.ts';

const config = loadConfig();
const page = testPagePipeline({
  worker: `pid-${process.pid}`,
  stepMs: Number(process.env.STEP_MS ?? 0),
  onPageStart: (task) => process.stdout.write(`page-start ${task.jobId} ${task.page.pageNumber}\n`),
});
const runtime = await startRuntime(config, createLogger(config.logLevel, { toStderr: true }), {
  workers: true,
  pipelines: async () => ({ page, export: testExportPipeline() }),
});
process.stdout.write('ready\n');
process.once('SIGTERM', async () => {
  await runtime.stop();
  process.stdout.write('stopped\n');
  process.exit(0);
});
