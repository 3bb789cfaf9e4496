// Runs commands: read the stream, fold, decide, append at the expected version with
// the reactions in the same transaction; on a version conflict, re-read and re-decide.
import type { PgBoss } from 'pg-boss';
import type pg from 'pg';
import { foldAccount, decideAccount, type AccountCommand, type AccountState, evolveAccount } from '../../domain/account.ts';
import { accountStreamId, jobStreamId, type AccountEvent, type EventMetadata, type JobEvent, type RecordedEvent } from '../../domain/events.ts';
import { decideJob, type JobCommand } from '../../domain/job-decide.ts';
import { evolve, foldJob, type JobState } from '../../domain/job.ts';
import type { Database, Queryable } from '../db/database.ts';
import { appendToStream } from '../store/append-to-stream.ts';
import { ConcurrencyError } from '../store/concurrency-error.ts';
import { readStream } from '../store/read-stream.ts';
import { toDomainEvent } from '../store/recorded-event.ts';
import { scheduleReactions } from '../workers/boss.ts';
import { reactionsTo } from '../workers/reactions.ts';

const MAX_ATTEMPTS = 20;

export interface CommandResult<S> {
  before: S;
  after: S;
  events: RecordedEvent[];
}

export class CommandBus {
  readonly db: Database;
  readonly boss: PgBoss;

  constructor(db: Database, boss: PgBoss) {
    this.db = db;
    this.boss = boss;
  }

  async loadJob(db: Queryable, jobId: string): Promise<JobState> {
    return foldJob((await readStream(db, jobStreamId(jobId))).map((event) => toDomainEvent<JobEvent>(event)));
  }

  async loadAccount(db: Queryable, accountId: string): Promise<AccountState> {
    return foldAccount((await readStream(db, accountStreamId(accountId))).map((event) => toDomainEvent<AccountEvent>(event)));
  }

  /** `command` may be a function of the current state (e.g. the next callback attempt number). */
  async job(jobId: string, command: JobCommand | ((state: JobState) => JobCommand), metadata: EventMetadata = {}): Promise<CommandResult<JobState>> {
    return this.retryOnConflict(async () => {
      const before = await this.loadJob(this.db.pool, jobId);
      const events = decideJob(before, typeof command === 'function' ? command(before) : command);
      if (events.length === 0) return { before, after: before, events: [] };
      const recorded = await this.db.transaction((client) => this.commitJobEvents(client, before, events, metadata));
      return { before, after: events.reduce(evolve, before), events: recorded };
    });
  }

  /** Appends job events decided elsewhere (e.g. submission) with their reactions, in `client`'s transaction. */
  async commitJobEvents(client: pg.PoolClient, before: JobState, events: JobEvent[], metadata: EventMetadata): Promise<RecordedEvent[]> {
    const after = events.reduce(evolve, before);
    const streamId = jobStreamId(after.jobId);
    const recorded = await appendToStream(client, streamId, before.version, events, { accountId: after.accountId, ...metadata });
    await scheduleReactions(this.boss, client, reactionsTo(events, after));
    return recorded;
  }

  async account(accountId: string, command: AccountCommand, metadata: EventMetadata = {}, alsoInTransaction?: (client: pg.PoolClient) => Promise<void>): Promise<CommandResult<AccountState>> {
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
    for (let tries = 1; ; tries++) {
      try {
        return await attempt();
      } catch (error) {
        if (!(error instanceof ConcurrencyError) || tries >= MAX_ATTEMPTS) throw error;
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 5 * tries));
      }
    }
  }
}
