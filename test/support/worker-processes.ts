// Real worker processes (test/support/worker-process.ts) for crash, loss and shutdown tests:
// started with the engine-test settings plus `env`, their stdout read line by line.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';

export interface WorkerProcess {
  child: ChildProcess;
  lines: string[];
  waitFor(predicate: (line: string) => boolean, timeoutMs?: number): Promise<string>;
  exited: Promise<number | null>;
}

export function startWorkerProcess(env: Record<string, string>, children?: ChildProcess[]): WorkerProcess {
  const child = spawn(process.execPath, [path.resolve(import.meta.dirname, 'worker-process.ts')], {
    env: {
      ...process.env,
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
      WORKER_CONCURRENCY: '1',
      WORKER_POLL_SECONDS: '0.5',
      TASK_HEARTBEAT_SECONDS: '10',
      SUPERVISE_INTERVAL_SECONDS: '1',
      PAGE_RETRY_LIMIT: '2',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children?.push(child);
  const lines: string[] = [];
  const waiters: Array<{ predicate: (line: string) => boolean; resolve: (line: string) => void }> = [];
  createInterface({ input: child.stdout! }).on('line', (line) => {
    lines.push(line);
    for (const waiter of [...waiters]) {
      if (waiter.predicate(line)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(line);
      }
    }
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    lines,
    exited,
    waitFor: (predicate, timeoutMs = 30_000) =>
      new Promise((resolve, reject) => {
        const found = lines.find(predicate);
        if (found) return resolve(found);
        const timer = setTimeout(() => reject(new Error(`worker did not print the expected line; got ${lines.join(' | ')}`)), timeoutMs);
        waiters.push({
          predicate,
          resolve: (line) => {
            clearTimeout(timer);
            resolve(line);
          },
        });
      }),
  };
}
