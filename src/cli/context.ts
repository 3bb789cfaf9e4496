// Runs a CLI command against the service's database: the running embedded
// PostgreSQL when a server is up, or a fresh start of it (stopped afterwards).
import { loadConfig } from '../platform/config.ts';
import { createLogger } from '../platform/logger.ts';
import { startRuntime, type Runtime } from '../runtime/runtime.ts';

export async function withRuntime<T>(work: (runtime: Runtime) => Promise<T>, options: { statementTimeoutMs?: number } = {}): Promise<T> {
  const config = loadConfig();
  const log = createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel, { toStderr: true });
  const runtime = await startRuntime(config, log, { workers: false, statementTimeoutMs: options.statementTimeoutMs });
  try {
    return await work(runtime);
  } finally {
    await runtime.stop();
  }
}
