import { Rejection } from '../../domain/rejections.ts';

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
