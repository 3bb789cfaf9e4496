// Registers the trainer role's worker (`hwr serve --role trainer`, and `all` where a trainer can
// run): the model-training queue, TRAINER_CONCURRENCY trainings at once in this process
// (docs/models.md, "Where training runs"). Its trainings stop with the process as page tasks do:
// handed back after the trainer's checkpoint is stored (shutdown.ts).
import type { BlobStore } from '../blobs/blob-store.ts';
import type { Config } from '../platform/config.ts';
import type { Logger } from '../platform/logger.ts';
import type { OcrEngine } from '../recognition/engine/ocr-engine.ts';
import { MODEL_TRAINING_RETRY_LIMIT, type Job, type PgBoss } from '../queue/boss.ts';
import { type ModelTrainingTaskData, QUEUES } from '../queue/queues.ts';
import type { CommandBus } from '../use-cases/command-bus.ts';
import { TaskTracker } from './mechanics/shutdown.ts';
import { createTrainingHandler, type TrainingWorkerDeps } from './tasks/training-worker.ts';
import type { Workers } from './start-workers.ts';

export interface TrainerDeps {
  boss: PgBoss;
  bus: CommandBus;
  blobs: BlobStore;
  config: Config;
  log: Logger;
  /** The Python with PyTorch (trainer-probe.ts). */
  python: string;
  sharedEngine: () => Promise<OcrEngine>;
  /** For tests: what the training worker takes besides (a small plan, a fast cancel check). */
  tuning?: Pick<TrainingWorkerDeps, 'trainerArgs' | 'checkpointMinutes' | 'watchIntervalMs'>;
}

export async function startTrainer(deps: TrainerDeps): Promise<Workers> {
  const log = deps.log.child({ role: 'trainer' });
  const tracker = new TaskTracker(deps.boss, log);
  const handle = tracker.track(
    QUEUES.modelTraining,
    createTrainingHandler({
      bus: deps.bus,
      blobs: deps.blobs,
      config: deps.config,
      log,
      python: deps.python,
      sharedEngine: deps.sharedEngine,
      retryLimit: MODEL_TRAINING_RETRY_LIMIT,
      ...deps.tuning,
    }),
  );
  await deps.boss.work<ModelTrainingTaskData>(
    QUEUES.modelTraining,
    {
      pollingIntervalSeconds: deps.config.workers.pollingIntervalSeconds,
      localConcurrency: deps.config.training.concurrency,
      batchSize: 1,
    },
    async (tasks: Job<ModelTrainingTaskData>[]) => {
      for (const task of tasks) await handle(task);
    },
  );
  log.info(
    { python: deps.python, concurrency: deps.config.training.concurrency, niceness: deps.config.training.niceness },
    'trainer running',
  );
  return tracker;
}
