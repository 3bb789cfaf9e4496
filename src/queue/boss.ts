// pg-boss in the same database as the events (schema `pgboss`), with its queues.
import { PgBoss } from 'pg-boss';
import type pg from 'pg';
import { CALLBACK_TASK_EXPIRE_SECONDS, type Config } from '../platform/config.ts';
import { poolTimeouts } from '../db/database.ts';
import type { Logger } from '../platform/logger.ts';
import { QUEUES } from './queues.ts';
import type { Reaction } from './reactions.ts';

/** pg-boss's types, for the modules that hold a queue or a task: they import pg-boss only through here. */
export type { Job, JobWithMetadata, PgBoss } from 'pg-boss';

/** Attempts of a training task after its first (a killed trainer's task is taken up again from its checkpoint). */
export const MODEL_TRAINING_RETRY_LIMIT = 3;
/** The longest one attempt of a training may hold its task: the trainer's time budget, the export and the measuring, with room. */
const MODEL_TRAINING_EXPIRE_SECONDS = 4 * 3600;

export interface BossOptions {
  /** Run maintenance and supervision (expiry of dead tasks, cron). Workers do; an API-only process need not. */
  supervise: boolean;
  log: Logger;
}

export async function startBoss(databaseUrl: string, config: Config, options: BossOptions): Promise<PgBoss> {
  const boss = new PgBoss({
    connectionString: databaseUrl,
    max: 10,
    application_name: 'hwr-boss',
    // The same connect and statement timeouts as the service's own pool (docs/reliability.md).
    ...poolTimeouts(config.database),
    useListenNotify: true,
    supervise: options.supervise,
    schedule: options.supervise,
    superviseIntervalSeconds: config.workers.superviseIntervalSeconds,
    monitorIntervalSeconds: Math.max(config.workers.superviseIntervalSeconds, 1),
  });
  // Maintenance, supervision and worker fetch errors (a database restart, a lost connection):
  // pg-boss retries them itself, so they are logged, never thrown.
  const bossLog = options.log.child({ component: 'pg-boss' });
  boss.on('error', (error: Error & { queue?: string; worker?: string }) => {
    bossLog.error({ err: error, queue: error.queue, worker: error.worker }, 'pg-boss error');
  });
  await boss.start();
  const common = { notify: true, deleteAfterSeconds: 7 * 24 * 3600 };
  // A task that runs out of attempts without its handler recording an outcome (a worker killed
  // on its last attempt, a lapsed heartbeat, an expiry) is copied by pg-boss, in the statement that
  // fails it, into its dead-letter queue, whose worker records the failure (lost-tasks.ts).
  const deadLetter = { ...common, retryLimit: 10, retryDelay: 2, retryBackoff: true, retryDelayMax: 60, expireInSeconds: 120 };
  await ensureQueue(boss, QUEUES.pageLost, deadLetter);
  await ensureQueue(boss, QUEUES.exportLost, deadLetter);
  await ensureQueue(boss, QUEUES.callbackLost, deadLetter);
  await ensureQueue(boss, QUEUES.page, {
    ...common,
    retryLimit: config.workers.pageRetryLimit,
    retryDelay: 1,
    expireInSeconds: config.workers.taskExpireSeconds,
    heartbeatSeconds: config.workers.heartbeatSeconds,
    deadLetter: QUEUES.pageLost,
  });
  await ensureQueue(boss, QUEUES.export, {
    ...common,
    retryLimit: config.workers.pageRetryLimit,
    retryDelay: 1,
    expireInSeconds: config.workers.taskExpireSeconds,
    heartbeatSeconds: config.workers.heartbeatSeconds,
    deadLetter: QUEUES.exportLost,
  });
  // A callback task records its own outcome as an event and schedules the next attempt itself;
  // pg-boss retries cover only a crash between sending and recording.
  await ensureQueue(boss, QUEUES.callback, {
    ...common,
    retryLimit: 3,
    retryDelay: 1,
    expireInSeconds: CALLBACK_TASK_EXPIRE_SECONDS,
    deadLetter: QUEUES.callbackLost,
  });
  await ensureQueue(boss, QUEUES.sweepStranded, { ...common, retryLimit: 1, expireInSeconds: 300 });
  await ensureQueue(boss, QUEUES.expireResults, { ...common, retryLimit: 1, expireInSeconds: 600 });
  await ensureQueue(boss, QUEUES.sweepOrphanBlobs, { ...common, retryLimit: 1, expireInSeconds: 600 });
  // Trainings (docs/models.md): a queued model's task waits here for a trainer. A killed trainer's
  // task is retried after its heartbeat lapses (and resumes from its checkpoint); one that runs
  // out of attempts without recording an end lands in the dead-letter queue.
  await ensureQueue(boss, QUEUES.modelTrainingLost, deadLetter);
  await ensureQueue(boss, QUEUES.modelTraining, {
    ...common,
    retryLimit: MODEL_TRAINING_RETRY_LIMIT,
    retryDelay: 10,
    expireInSeconds: MODEL_TRAINING_EXPIRE_SECONDS,
    heartbeatSeconds: config.workers.heartbeatSeconds,
    deadLetter: QUEUES.modelTrainingLost,
  });
  return boss;
}

async function ensureQueue(boss: PgBoss, name: string, options: Parameters<PgBoss['createQueue']>[1]): Promise<void> {
  if (await boss.getQueue(name)) await boss.updateQueue(name, options);
  else await boss.createQueue(name, options);
}

/** Writes reactions through the caller's transaction. */
export async function scheduleReactions(boss: PgBoss, client: pg.PoolClient, reactions: readonly Reaction[]): Promise<void> {
  const db = { executeSql: (text: string, values?: unknown[]) => client.query(text, values as unknown[]) };
  const sends = new Map<string, Array<{ id: string; data: object; startAfter?: Date; priority?: number }>>();
  for (const reaction of reactions) {
    if (reaction.kind === 'cancel') {
      await boss.cancel(reaction.queue, reaction.ids, { db });
    } else {
      const list = sends.get(reaction.queue) ?? [];
      list.push({ id: reaction.id, data: reaction.data, startAfter: reaction.startAfter, priority: reaction.priority });
      sends.set(reaction.queue, list);
    }
  }
  for (const [queue, jobs] of sends) await boss.insert(queue, jobs, { db });
}
