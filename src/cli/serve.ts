// `hwr serve [--role api|worker|trainer|all]`: the HTTP API, the page workers, the trainer (docs/models.md),
// or all of them (default; the trainer where a Python with PyTorch is found).
import { countAccounts, createAccount, createApiKey } from '../use-cases/accounts.ts';
import { loadConfig } from '../platform/config.ts';
import { defaultPipelines } from '../pipeline/default-pipelines.ts';
import { startHttpServer, type RunningServer } from '../server/http-server.ts';
import { createLogger } from '../platform/logger.ts';
import { startConfiguredMetricsServer } from '../server/metrics-server.ts';
import { startRuntime, type Runtime } from '../runtime/runtime.ts';
import { parseArgs, stringOption, UsageError } from './args.ts';

const ROLES = ['api', 'worker', 'trainer', 'all'] as const;
type Role = (typeof ROLES)[number];

export async function run(args: string[]): Promise<number> {
  const role = (stringOption(parseArgs(args), 'role') ?? 'all') as Role;
  if (!ROLES.includes(role)) throw new UsageError(`--role must be one of ${ROLES.join(', ')}`);
  const config = loadConfig();
  const log = createLogger(config.logLevel);
  // Listened for before anything starts: workers fetch tasks while the start goes on, and a
  // SIGTERM then must stop them gracefully, not end the process with its tasks claimed.
  const stopRequested = new Promise<string>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
  const runtime = await startRuntime(config, log, {
    workers: role === 'worker' || role === 'all',
    ...(role === 'trainer' ? { trainer: 'required' as const } : role === 'all' ? { trainer: 'where-available' as const } : {}),
    pipelines: () => defaultPipelines(config, log),
    claimOrphanedDatabase: true,
  });
  let server: RunningServer | null = null;
  const metrics = await startConfiguredMetricsServer(runtime);
  try {
    if (role === 'api' || role === 'all') {
      if (!config.databaseUrl) await bootstrapFirstAccount(runtime);
      server = await startHttpServer(runtime);
      log.info({ port: server.port, base_url: config.baseUrl, role }, 'hwr listening');
    } else {
      log.info({ role }, role === 'trainer' ? 'hwr trainer running' : 'hwr worker running');
    }
  } catch (error) {
    // A start that fails (a port already taken) stops what did start, workers and the embedded
    // PostgreSQL included, and the process exits non-zero (main.ts), instead of running headless.
    log.error({ err: error }, 'start failed: stopping');
    await metrics?.close();
    await runtime.stopWorkers(0);
    await runtime.stop();
    throw error;
  }

  const signal = await stopRequested;
  log.info({ signal, grace_seconds: config.workers.shutdownGraceSeconds }, 'shutting down: finishing in-flight requests and tasks');
  // Requests and tasks drain side by side, within the grace: a shutdown is not a failure, and
  // tasks still running at its end go back to their queues unspent (docs/reliability.md).
  await Promise.all([server?.close(config.workers.shutdownGraceSeconds * 1000), runtime.stopWorkers()]);
  await metrics?.close();
  await runtime.stop();
  log.info('stopped');
  // A connection the network cut off keeps the event loop alive after the stop: exit regardless.
  setTimeout(() => process.exit(0), 1_000).unref();
  return 0;
}

/**
 * An `hwr` command as it must be typed in another terminal to reach this server: with the
 * settings that find its database and make its links (a setup link made without this server's
 * PORT pointed at port 8080).
 */
function operatorCommand(args: string): string {
  const settings = ['DATA_DIR', 'PORT', 'BASE_URL']
    .filter((name) => process.env[name])
    .map((name) => `${name}=${/^[\w./:@-]+$/.test(process.env[name]!) ? process.env[name] : `'${process.env[name]}'`} `)
    .join('');
  return `${settings}npm run -s hwr -- ${args}`;
}

/** First start on the embedded database: an account `default` with one key, printed once. */
async function bootstrapFirstAccount(runtime: Runtime): Promise<void> {
  if ((await countAccounts(runtime.db.pool)) > 0) return;
  const account = await createAccount(runtime.bus, 'default', 'bootstrap');
  const key = await createApiKey(runtime.bus, 'default', 'first start', 'bootstrap');
  process.stdout.write(
    `${[
      '',
      'First start: created account "default". These are shown ONCE; store them in a secret manager now.',
      `  API key:        ${key.key}`,
      `  Webhook secret: ${account.webhookSecret}`,
      `Create more with \`${operatorCommand('keys create --account default --label NAME')}\`.`,
      `Customer portal: ${runtime.config.baseUrl}/portal; invite its first user with \`${operatorCommand('users invite --account default --email YOU@EXAMPLE.ORG')}\` (docs/portal.md).`,
      '',
    ].join('\n')}\n`,
  );
}
