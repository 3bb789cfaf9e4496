// Starts what a process needs: the database (embedded or DATABASE_URL), migrations,
// pg-boss, the command bus and blob storage; and, for worker roles, the workers.
import path from 'node:path';
import type { BlobStore } from '../blobs/blob-store.ts';
import { openBlobStore, type OpenedBlobStore } from '../blobs/create-blob-store.ts';
import { CommandBus } from '../use-cases/command-bus.ts';
import type { Config } from '../platform/config.ts';
import { checkConnection, openDatabase, type Database } from '../db/database.ts';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../db/embedded-postgres.ts';
import { migrate } from '../store/migrate.ts';
import type { Logger } from '../platform/logger.ts';
import { backgroundErrors, commandCommitDuration } from '../metrics/metrics.ts';
import { measuredPagePipeline } from '../pipeline/measured-page-pipeline.ts';
import type { ExportPipeline, PagePipeline } from '../pipeline/pipeline.ts';
import { startBoss, type PgBoss } from '../queue/boss.ts';
import { startWorkers, type Workers } from '../workers/start-workers.ts';
import type { TrainerDeps } from '../workers/start-trainer.ts';
import { TRAINING_INSTRUCTION, type TrainerAvailability, trainerAvailability } from './trainer-probe.ts';

export interface Runtime {
  config: Config;
  log: Logger;
  db: Database;
  boss: PgBoss;
  bus: CommandBus;
  blobs: BlobStore;
  /** Whether training is offered here (trainer-probe.ts): looked for on the first call, then kept. */
  trainer(): Promise<TrainerAvailability>;
  /**
   * Stops this process's workers: no new tasks; running ones may finish within `graceMs`
   * (default SHUTDOWN_GRACE_SECONDS); the rest are handed back without spending an attempt.
   * Idempotent; `stop()` calls it.
   */
  stopWorkers(graceMs?: number): Promise<void>;
  stop(): Promise<void>;
}

export interface RuntimeOptions {
  /** Start pg-boss workers for pages, exports, callbacks and expiry. */
  workers: boolean;
  /**
   * Start the trainer (the model-training queue, docs/models.md): `required` (`--role trainer`:
   * a start without a Python that can train fails), `where-available` (`--role all`: where
   * TRAINER=auto finds such a Python), or not at all (absent).
   */
  trainer?: 'required' | 'where-available';
  /** For tests: the training worker's small plan and fast checks. */
  trainerTuning?: TrainerDeps['tuning'];
  pipelines?: () => Promise<{ page: PagePipeline; export: ExportPipeline; close?(): Promise<void> }>;
  /** Overrides DATABASE_STATEMENT_TIMEOUT_MS for this process's pool (0: none, and no DATABASE_QUERY_TIMEOUT_MS), e.g. `hwr projections rebuild`. */
  statementTimeoutMs?: number;
  /** A service (`hwr serve`): an embedded PostgreSQL left running by a killed owner becomes this process's (embedded-postgres.ts). */
  claimOrphanedDatabase?: boolean;
}

export async function resolveDatabaseUrl(
  config: Config,
  log: Logger,
  claimOrphan = false,
): Promise<{ url: string; embedded: EmbeddedDatabase | null }> {
  if (config.databaseUrl) return { url: config.databaseUrl, embedded: null };
  const embedded = await startEmbeddedPostgres({
    dataDir: path.join(config.dataDir, 'postgres'),
    port: config.embeddedPostgresPort,
    log: (line) => log.debug({ postgres: line.trim() }),
    notice: (line) => log.info(line),
    rootFallbackDir: config.embeddedPostgresRootDir,
    claimOrphan,
  });
  log.info({ owned: embedded.owned }, embedded.owned ? 'embedded PostgreSQL started' : 'connected to the running embedded PostgreSQL');
  return { url: embedded.url, embedded };
}

export async function startRuntime(config: Config, log: Logger, options: RuntimeOptions): Promise<Runtime> {
  const { url, embedded } = await resolveDatabaseUrl(config, log, options.claimOrphanedDatabase);
  const statementTimeoutMs = options.statementTimeoutMs ?? config.database.statementTimeoutMs;
  const db = openDatabase(
    url,
    {
      max: Math.max(10, config.workers.pageConcurrency * 2 + 6),
      connectTimeoutMs: config.database.connectTimeoutMs,
      statementTimeoutMs,
      // Lifting the statement timeout (a projections rebuild) lifts the client's wait, and the
      // server's on a transaction that waits on the rebuild's own work, as well.
      queryTimeoutMs: statementTimeoutMs === 0 ? 0 : config.database.queryTimeoutMs,
      idleInTransactionTimeoutMs: statementTimeoutMs === 0 ? 0 : config.database.idleInTransactionTimeoutMs,
    },
    log,
  );
  let boss: PgBoss | null = null;
  let closePipelines = async () => {};
  let opened: OpenedBlobStore | null = null;
  try {
    await checkConnection(db, config.database.connectTimeoutMs);
    await migrate(db.pool);
    boss = await startBoss(url, config, { supervise: options.workers, log });
    // Counted for GET /metrics; boss.ts and database.ts log them.
    boss.on('error', () => backgroundErrors.inc({ component: 'pg-boss' }));
    db.pool.on('error', () => backgroundErrors.inc({ component: 'pg-pool' }));
    // The bus's transactions (event appends with projections and reactions) are timed for GET /metrics.
    const bus = new CommandBus(measuredTransactions(db), boss);
    opened = await openBlobStore(config);
    const { blobs } = opened;
    const blobStore = opened;
    let workers: Workers | null = null;
    const probeTrainer = trainerAvailability(config.training);
    let trainerLogged = false;
    const trainer = async () => {
      const availability = await probeTrainer();
      if (!trainerLogged) {
        trainerLogged = true;
        log.info(
          { trainer: availability },
          availability.available ? 'training is offered' : `training is not offered: ${TRAINING_INSTRUCTION}`,
        );
      }
      return availability;
    };
    let trainerWorkers: Workers | null = null;
    if (options.trainer) {
      const python = await trainerPython(config, trainer, options.trainer);
      if (python) {
        // Loaded only where a trainer runs: it brings the recognition models (for measuring a trained model).
        const { startTrainer } = await import('../workers/start-trainer.ts');
        const { sharedEngine } = await import('../pipeline/shared-engine.ts');
        trainerWorkers = await startTrainer({
          boss,
          bus,
          blobs,
          config,
          log,
          python,
          sharedEngine: () => sharedEngine(config.recognition),
          ...(options.trainerTuning ? { tuning: options.trainerTuning } : {}),
        });
      }
    }
    if (options.workers) {
      if (!options.pipelines) throw new Error('a worker needs pipelines');
      const pipelines = await options.pipelines();
      closePipelines = pipelines.close ?? closePipelines;
      workers = await startWorkers({
        boss,
        bus,
        blobs,
        config,
        log,
        pagePipeline: measuredPagePipeline(pipelines.page),
        exportPipeline: pipelines.export,
      });
    }
    const startedBoss = boss;
    let workersStopped: Promise<void> | null = null;
    const stopWorkers = (graceMs = config.workers.shutdownGraceSeconds * 1000) =>
      (workersStopped ??= Promise.all([
        workers?.stop(graceMs),
        // A training does not finish within a grace: it is handed back at once, its trainer
        // checkpoints on SIGTERM, and its next attempt resumes from there.
        trainerWorkers?.stop(0, TRAINER_CHECKPOINT_WAIT_MS),
      ]).then(() => {}));
    return {
      config,
      log,
      db,
      boss,
      bus,
      blobs,
      trainer,
      stopWorkers,
      stop: async () => {
        await stopWorkers();
        // Tasks still running here were handed back; pg-boss's own stop would fail them (an attempt).
        await closingWithin('pg-boss', startedBoss.stop({ graceful: false }), log);
        await closePipelines();
        await blobStore.close();
        await closingWithin('pg-pool', db.close(), log);
        if (embedded) await embedded.stop();
      },
    };
  } catch (error) {
    // A start that fails leaves nothing running: the caller exits at once (docs/reliability.md).
    await boss?.stop({ graceful: false }).catch(() => {});
    await closePipelines().catch(() => {});
    await opened?.close().catch(() => {});
    await db.close().catch(() => {});
    if (embedded) await embedded.stop().catch(() => {});
    throw error;
  }
}

/** How long a stopping trainer waits for its training's checkpoint to be written and stored. */
const TRAINER_CHECKPOINT_WAIT_MS = 40_000;

/**
 * The Python this process trains with, or null where it does not train: `where-available` trains
 * where TRAINER=auto found a Python with PyTorch; `required` also with TRAINER=on (TRAINER_PYTHON,
 * else python3) and fails the start where TRAINER=off or no such Python was found.
 */
async function trainerPython(
  config: Config,
  probe: () => Promise<TrainerAvailability>,
  mode: 'required' | 'where-available',
): Promise<string | null> {
  const availability = await probe();
  if (availability.python) return availability.python;
  if (mode === 'where-available') return null;
  if (config.training.mode === 'on') return config.training.python ?? 'python3';
  throw new Error(`the trainer role cannot run here: ${availability.reason}. ${TRAINING_INSTRUCTION}`);
}

/**
 * How long a stop waits for database connections to close. Closing one that the network cut off
 * (a partition) waits for a goodbye that never comes; the stop goes on without it.
 */
const CONNECTIONS_CLOSE_WITHIN_MS = 5_000;

async function closingWithin(component: string, closing: Promise<void>, log: Logger): Promise<void> {
  // Still running when the stop goes on: its failure then is of no use to anyone.
  closing.catch(() => {});
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), CONNECTIONS_CLOSE_WITHIN_MS);
  });
  try {
    if ((await Promise.race([closing, late])) === 'late')
      log.warn(
        { component, waited_ms: CONNECTIONS_CLOSE_WITHIN_MS },
        'database connections did not close in time (cut off by the network?): stopping without them',
      );
  } finally {
    clearTimeout(timer);
  }
}

/** The database with its transactions timed (hwr_command_commit_duration_seconds). */
function measuredTransactions(db: Database): Database {
  return {
    ...db,
    transaction: async (work) => {
      const started = performance.now();
      let outcome = 'error';
      try {
        const result = await db.transaction(work);
        outcome = 'committed';
        return result;
      } finally {
        commandCommitDuration.observe({ outcome }, (performance.now() - started) / 1000);
      }
    },
  };
}
