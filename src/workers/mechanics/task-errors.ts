import { Rejection } from '../../../domain/rejections.ts';

/** The job ended (cancelled, failed, done) while a task ran: the task's work is dropped. */
export function isJobEnded(error: unknown): boolean {
  return error instanceof Rejection && (error.code === 'job_cancelled' || error.code === 'job_already_finished');
}

/** Errors that fail the same way on every try (a corrupt image, a bad model) are not retried. */
export function isPermanent(error: unknown): boolean {
  return (error as { retryable?: unknown } | null)?.retryable === false;
}

export function describeError(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === 'string' ? `${error.message} (${code})` : error.message;
  }
  return String(error);
}

/** The reason a task's signal carries when a stopping worker hands the task back (shutdown.ts). */
export class HandedBack extends Error {
  constructor() {
    super('the worker is stopping: task handed back to the queue');
    this.name = 'HandedBack';
  }
}

/** The task was handed back by a stopping worker: its handler records nothing (no failure, no attempt spent). */
export function wasHandedBack(signal: AbortSignal): boolean {
  return signal.aborted && signal.reason instanceof HandedBack;
}
