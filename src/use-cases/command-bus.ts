// Runs commands: read, fold, decide, append with the reactions in the same transaction;
// on a conflict, re-read and re-decide (with backoff, never failing the caller's work).
//
// A job's stream is one ordered history, but its commands have two consistency boundaries
// (docs/architecture.md, "Consistency boundaries"):
//  - job-level commands (cancel, fail, succeed, callbacks, expiry) decide from the whole
//    stream and conflict only with other job-level events;
//  - page commands (StartStep of a page, CompletePage) decide from the job-level events and
//    their own page's events, so the pages of one job never conflict with each other. Their
//    read does not grow with the job: JobQueued (every page's source) is read once per process.
import type pg from 'pg';
import { foldAccount, decideAccount, type AccountCommand, type AccountState, evolveAccount } from '../../domain/account.ts';
import {
  accountStreamId,
  jobStreamId,
  modelStreamId,
  type AccountEvent,
  type EventMetadata,
  type JobEvent,
  type ModelEvent,
  type RecordedEvent,
} from '../../domain/events.ts';
import { decideJob, type JobCommand } from '../../domain/job-decide.ts';
import { evolveJob, foldJob, type JobState } from '../../domain/job.ts';
import { decideModel, type ModelCommand } from '../../domain/model-decide.ts';
import { evolveModel, foldModel, type ModelState } from '../../domain/model.ts';
import { LruCache } from '../shared/lru-cache.ts';
import type { Database, Queryable } from '../db/database.ts';
import { appendToStream } from '../store/append-to-stream.ts';
import { ConcurrencyError } from '../store/concurrency-error.ts';
import { readStream } from '../store/read-stream.ts';
import { countStreamEvents, readStreamHead, readStreamScope } from '../store/read-stream-scope.ts';
import { toDomainEvent } from '../store/recorded-event.ts';
import { scheduleReactions, type PgBoss } from '../queue/boss.ts';
import { firstPageTag } from '../queue/fair-share.ts';
import { modelReactionsTo, reactionsTo } from '../queue/reactions.ts';

/** A conflict is retried until this long has passed since the first try. */
const CONFLICT_RETRY_MS = 60_000;
const CONFLICT_BACKOFF_CAP_MS = 200;
/** JobQueued events kept per process (a 1,000-page job's is about 200 KB). */
const JOB_HEADS_KEPT = 64;

export type PageCommand = Extract<JobCommand, { type: 'StartStep' } | { type: 'CompletePage' }> & { page: number };

/**
 * A job as one page's commands see it: the job-level facts and that page's facts. Its
 * pageSteps/completedPages hold that page only, and `version` is not the stream's version.
 */
export interface PageView {
  state: JobState;
  /** The last stream version of the view's scope, the condition of its append. */
  seenVersion: number;
}

export interface CommandResult<S> {
  before: S;
  after: S;
  events: RecordedEvent[];
}

/** A page command's result, with the page's view after it (null when the job does not exist). */
export interface PageCommandResult extends CommandResult<JobState> {
  view: PageView | null;
}

export class CommandBus {
  readonly db: Database;
  readonly boss: PgBoss;
  /** Conflicts retried since start, for benchmarks and logs. */
  conflicts = 0;
  private readonly jobHeads = new LruCache<string, JobEvent>(JOB_HEADS_KEPT);

  constructor(db: Database, boss: PgBoss) {
    this.db = db;
    this.boss = boss;
  }

  async loadJob(db: Queryable, jobId: string): Promise<JobState> {
    return foldJob((await readStream(db, jobStreamId(jobId))).map((event) => toDomainEvent<JobEvent>(event)));
  }

  /** The job-level events and `page`'s events; null when the job does not exist. */
  async loadPageView(db: Queryable, jobId: string, page: number): Promise<PageView | null> {
    const streamId = jobStreamId(jobId);
    let head = this.jobHeads.get(streamId);
    if (head === undefined) {
      const recorded = await readStreamHead(db, streamId);
      if (recorded === undefined) return null;
      head = toDomainEvent<JobEvent>(recorded);
      this.jobHeads.set(streamId, head);
    }
    const scoped = await readStreamScope(db, streamId, { page });
    const state = foldJob([head, ...scoped.map((event) => toDomainEvent<JobEvent>(event))]);
    return { state, seenVersion: scoped.at(-1)?.streamVersion ?? 1 };
  }

  async loadAccount(db: Queryable, accountId: string): Promise<AccountState> {
    return foldAccount((await readStream(db, accountStreamId(accountId))).map((event) => toDomainEvent<AccountEvent>(event)));
  }

  /**
   * A job-level command, decided from the whole stream. Page commands go to `page`.
   * `command` may be a function of the current state (e.g. the next callback attempt number).
   */
  async job(
    jobId: string,
    command: JobCommand | ((state: JobState) => JobCommand),
    metadata: EventMetadata = {},
  ): Promise<CommandResult<JobState>> {
    if (typeof command !== 'function' && isPageCommand(command)) return this.page(jobId, command, metadata);
    return this.retryOnConflict(async () => {
      const before = await this.loadJob(this.db.pool, jobId);
      const decided = typeof command === 'function' ? command(before) : command;
      if (isPageCommand(decided)) throw new Error(`${decided.type} of a page is a page command`);
      const events = decideJob(before, decided);
      if (events.length === 0) return { before, after: before, events: [] };
      const recorded = await this.db.transaction((client) => this.commitJobEvents(client, before, events, metadata));
      return { before, after: events.reduce(evolveJob, before), events: recorded };
    });
  }

  /**
   * Appends job-level events decided elsewhere (e.g. submission) with their reactions, in
   * `client`'s transaction. They conflict only with job-level events appended since `before`:
   * page events do not change what a job-level command decides from, except SucceedJob and the
   * export step, which need every page completed, after which no page event can be appended.
   */
  async commitJobEvents(client: pg.PoolClient, before: JobState, events: JobEvent[], metadata: EventMetadata): Promise<RecordedEvent[]> {
    const after = events.reduce(evolveJob, before);
    const streamId = jobStreamId(after.jobId);
    // A new job's page tasks get their fair-share priorities (fair-share.ts; it takes the account's lock first).
    const queued = events.some((event) => event.type === 'JobQueued');
    const context = queued ? { firstPageTag: await firstPageTag(client, after.accountId, after.jobId) } : {};
    const recorded = await appendToStream(
      client,
      streamId,
      before.version,
      events,
      { accountId: after.accountId, ...metadata },
      { scope: { page: null } },
    );
    await scheduleReactions(this.boss, client, reactionsTo(events, after, context));
    return recorded;
  }

  /**
   * A page command, decided from the page's view; other pages' events never conflict with it.
   * `known`: the view as the caller last had it (from loadPageView or the previous command's
   * result), which saves the read: the append's scope check still refuses it if anything in the
   * view's scope happened since, and the retry then reads afresh.
   */
  async page(jobId: string, command: PageCommand, metadata: EventMetadata = {}, known?: PageView): Promise<PageCommandResult> {
    let reuse = known;
    return this.retryOnConflict(async () => {
      const view = reuse ?? (await this.loadPageView(this.db.pool, jobId, command.page));
      reuse = undefined;
      const before = view?.state ?? foldJob([]);
      const events = decideJob(before, command);
      if (events.length === 0 || view === null) return { before, after: before, events: [], view };
      const after = events.reduce(evolveJob, before);
      const streamId = jobStreamId(jobId);
      const append = (db: Queryable, durable: boolean) =>
        appendToStream(
          db,
          streamId,
          view.seenVersion,
          events,
          { accountId: after.accountId, ...metadata },
          { scope: { page: command.page }, durable },
        );
      const completesPage = events.some((event) => event.type === 'PageCompleted');
      if (!completesPage && reactionsTo(events, after).length === 0) {
        // A step start: one statement, its own transaction, so the stream's append lock is held
        // only while the server runs it; and progress, so its commit does not wait for the disk
        // (lost in a database crash, it is recorded again by the page's retried task).
        const recorded = await append(this.db.pool, false);
        return { before, after, events: recorded, view: { state: after, seenVersion: recorded.at(-1)!.streamVersion } };
      }
      const recorded = await this.db.transaction(async (client) => {
        const appended = await append(client, true);
        // The stream's append lock is held until commit: this count is exact, so exactly one
        // completion sees the last page done and schedules the export.
        const completed = await countStreamEvents(client, streamId, 'PageCompleted');
        await scheduleReactions(this.boss, client, reactionsTo(events, after, { pagesDone: completed }));
        return appended;
      });
      return { before, after, events: recorded, view: { state: after, seenVersion: recorded.at(-1)!.streamVersion } };
    });
  }

  async loadModel(db: Queryable, modelId: string): Promise<ModelState> {
    return foldModel((await readStream(db, modelStreamId(modelId))).map((event) => toDomainEvent<ModelEvent>(event)));
  }

  /**
   * A model command (domain/model-decide.ts), decided from the model's whole stream (a few dozen
   * events) and appended with its reactions (the training task) in one transaction. `command`
   * may be a function of the current state (DELETE: cancel a training, retire a ready model).
   */
  async model(
    modelId: string,
    command: ModelCommand | ((state: ModelState) => ModelCommand),
    metadata: EventMetadata = {},
  ): Promise<CommandResult<ModelState>> {
    return this.retryOnConflict(async () => {
      const before = await this.loadModel(this.db.pool, modelId);
      const events = decideModel(before, typeof command === 'function' ? command(before) : command);
      if (events.length === 0) return { before, after: before, events: [] };
      const after = events.reduce(evolveModel, before);
      const recorded = await this.db.transaction(async (client) => {
        const appended = await appendToStream(client, modelStreamId(modelId), before.version, events, {
          accountId: after.accountId,
          ...metadata,
        });
        await scheduleReactions(this.boss, client, modelReactionsTo(events, after));
        return appended;
      });
      return { before, after, events: recorded };
    });
  }

  async account(
    accountId: string,
    command: AccountCommand,
    metadata: EventMetadata = {},
    alsoInTransaction?: (client: pg.PoolClient) => Promise<void>,
  ): Promise<CommandResult<AccountState>> {
    return this.retryOnConflict(async () => {
      const before = await this.loadAccount(this.db.pool, accountId);
      const events = decideAccount(before, command);
      const recorded = await this.db.transaction(async (client) => {
        const appended = await appendToStream(client, accountStreamId(accountId), before.version, events, { accountId, ...metadata });
        if (alsoInTransaction) await alsoInTransaction(client);
        return appended;
      });
      return { before, after: events.reduce(evolveAccount, before), events: recorded };
    });
  }

  private async retryOnConflict<T>(attempt: () => Promise<T>): Promise<T> {
    const started = Date.now();
    for (let tries = 1; ; tries++) {
      try {
        return await attempt();
      } catch (error) {
        if (!(error instanceof ConcurrencyError) || Date.now() - started > CONFLICT_RETRY_MS) throw error;
        this.conflicts++;
        // Full jitter on an exponential backoff, so retries of many writers spread out.
        const ceiling = Math.min(CONFLICT_BACKOFF_CAP_MS, 2 ** tries);
        await new Promise((resolve) => setTimeout(resolve, Math.random() * ceiling));
      }
    }
  }
}

function isPageCommand(command: JobCommand): command is PageCommand {
  return command.type === 'CompletePage' || (command.type === 'StartStep' && command.page !== null);
}
