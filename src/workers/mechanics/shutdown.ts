// A shutdown is not a failure. A stopping worker stops fetching, lets its running tasks finish
// within the grace (SHUTDOWN_GRACE_SECONDS), then hands the rest back to their queues as if they
// had never been fetched: no attempt spent, nothing recorded, and another worker (or this one
// after its restart) runs them again. Handlers are idempotent, so a handed-back task that still
// finishes here is harmless.
import type { Job, PgBoss } from '../../queue/boss.ts';
import type { Logger } from '../../platform/logger.ts';
import { HandedBack } from './task-errors.ts';

interface InFlight {
  queue: string;
  id: string;
  retryCount: number;
  /** Set just before the task is put back: an abort from then on reads as HandedBack. */
  handingBack: boolean;
  controller: AbortController;
  done: Promise<void>;
}

export class TaskTracker {
  private readonly inFlight = new Map<string, InFlight>();
  private readonly queues = new Set<string>();
  private readonly boss: PgBoss;
  private readonly log: Logger;
  private readonly schema: string;

  constructor(boss: PgBoss, log: Logger, schema = 'pgboss') {
    this.boss = boss;
    this.log = log;
    this.schema = schema;
  }

  /**
   * Wraps a one-task handler. Its task's signal fires when pg-boss aborts the task (its claim
   * gone) or when the task is handed back; the reason is then HandedBack, even where pg-boss's
   * heartbeat, finding the claim gone once the task is back in the queue, fires first.
   */
  track<T>(queue: string, handler: (task: Job<T>) => Promise<void>): (task: Job<T>) => Promise<void> {
    this.queues.add(queue);
    return async (task) => {
      const controller = new AbortController();
      let finish = () => {};
      const entry: InFlight = {
        queue,
        id: task.id,
        retryCount: task.retryCount,
        handingBack: false,
        controller,
        done: new Promise((resolve) => (finish = resolve)),
      };
      const onAbort = () => controller.abort(entry.handingBack ? new HandedBack() : task.signal.reason);
      if (task.signal.aborted) onAbort();
      else task.signal.addEventListener('abort', onAbort, { once: true });
      const key = `${task.id}:${task.retryCount}`;
      this.inFlight.set(key, entry);
      try {
        await handler({ ...task, signal: controller.signal });
      } finally {
        task.signal.removeEventListener('abort', onAbort);
        this.inFlight.delete(key);
        finish();
      }
    };
  }

  /** Registers a queue whose handler is not wrapped, so that stop() stops fetching from it too. */
  addQueue(queue: string): void {
    this.queues.add(queue);
  }

  get running(): number {
    return this.inFlight.size;
  }

  /**
   * Stops fetching, waits up to `graceMs` for running tasks, then hands back those still running
   * and aborts their handlers (waiting at most `abortWaitMs` for them to return).
   */
  async stop(graceMs: number, abortWaitMs = 3000): Promise<{ finished: number; handedBack: number }> {
    await Promise.all([...this.queues].map((queue) => this.boss.offWork(queue, { wait: false }).catch(() => {})));
    const atStop = this.inFlight.size;
    if (atStop > 0) this.log.info({ running: atStop, grace_ms: graceMs }, 'stopping: letting running tasks finish');
    await Promise.race([Promise.all([...this.inFlight.values()].map((entry) => entry.done)), delay(graceMs)]);
    const left = [...this.inFlight.values()];
    if (left.length === 0) return { finished: atStop, handedBack: 0 };
    // Back in the queue first, then the abort: a handler that returns after the abort finds its
    // claim gone, so pg-boss neither completes nor fails the task.
    let handedBack = 0;
    const aborted: InFlight[] = [];
    for (const entry of left) {
      entry.handingBack = true;
      try {
        const result = await this.boss.getDb().executeSql(
          `update ${this.schema}.job set state = 'created', started_on = null, heartbeat_on = null
            where name = $1 and id = $2 and state = 'active' and retry_count = $3 returning id`,
          [entry.queue, entry.id, entry.retryCount],
        );
        // No row: the task finished, or its claim went, meanwhile; aborting the handler is harmless.
        handedBack += result.rows.length;
      } catch (error) {
        // Left running and active: pg-boss's stop fails it, or its heartbeat lapses after the
        // exit, and it is retried, spending an attempt.
        entry.handingBack = false;
        this.log.error({ err: error, queue: entry.queue, task_id: entry.id }, 'could not hand a task back');
        continue;
      }
      entry.controller.abort(new HandedBack());
      aborted.push(entry);
    }
    this.log.info({ handed_back: handedBack, still_running: left.length }, 'grace over: unfinished tasks handed back');
    await Promise.race([Promise.all(aborted.map((entry) => entry.done)), delay(abortWaitMs)]);
    return { finished: atStop - left.length, handedBack };
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
