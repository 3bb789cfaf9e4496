// HwrClient: the HTTP API from code (global fetch; no dependency). The retry rules a careful
// client needs: 429 and 503 are retried after their Retry-After (seconds or a date; else a
// backoff), network errors are retried where a repeat is harmless (GET, DELETE, and a submit,
// which always carries an Idempotency-Key, so a repeated upload returns the same job).
import { randomUUID } from 'node:crypto';
import { createWriteStream, openAsBlob } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import {
  MODEL_END_STATES,
  TERMINAL_STATES,
  type JobEvents,
  type JobStatus,
  type ModelList,
  type ModelStatus,
  type ModelSubmission,
  type Problem,
  type Submission,
  type SubmitOptions,
  type TrainOptions,
  type Usage,
} from './types.ts';

export interface HwrClientOptions {
  /** The service, e.g. `http://localhost:8080`. */
  url: string;
  apiKey: string;
  /** Retries of one request on 429, 503 or (where harmless) a network error. Default 5. */
  retries?: number;
  /** Longest wait before a retry, whatever Retry-After says. Default 60 s. */
  maxRetryWaitMs?: number;
  /** Called before each retry (for logs). */
  onRetry?: (info: { attempt: number; waitMs: number; reason: string }) => void;
  fetch?: typeof fetch;
}

export interface SubmitRequest extends SubmitOptions {
  /** Sent as Idempotency-Key; a random UUID when not given (retries are then still safe). */
  idempotencyKey?: string;
  /** File name the service sees (in error messages); default the file's name or `scan.zip`. */
  filename?: string;
  signal?: AbortSignal;
}

export interface TrainRequest extends TrainOptions {
  /** File name the service sees (in error messages); default the file's name or `ground-truth.zip`. */
  filename?: string;
  signal?: AbortSignal;
}

export interface WaitOptions<Status = JobStatus> {
  /**
   * Called with the first status and then with every status that differs in state, pages_done or
   * current_step (a job), or in state or epoch (a model).
   */
  onChange?: (status: Status) => void;
  /** Poll interval; default 1000 ms. */
  intervalMs?: number;
  /**
   * How long the service may stay unreachable (network errors, 502/503/504 after a request's own
   * retries) while the job is followed; default 5 minutes. A restart or a deploy takes seconds to
   * a minute, and the job goes on meanwhile: giving up after one request's retries (about 15 s)
   * left a user with an error for a job that then finished.
   */
  outageMs?: number;
  /** Called once when the service stops answering, with the reason. */
  onOutage?: (reason: string) => void;
  signal?: AbortSignal;
}

const DEFAULT_OUTAGE_MS = 5 * 60_000;
const OUTAGE_POLL_MS = 3000;

/** A failure of the service's reachability, not of the request: worth waiting out. */
function isOutage(error: unknown): boolean {
  if (error instanceof HwrApiError) return [502, 503, 504].includes(error.status);
  // fetch's own failure to reach the service (undici: TypeError "fetch failed", its cause the socket's error).
  return error instanceof TypeError && error.message === 'fetch failed';
}

/** An answer other than 2xx, with the service's problem+json body when it sent one. */
export class HwrApiError extends Error {
  readonly status: number;
  readonly problem: Problem | null;
  constructor(status: number, problem: Problem | null, fallback: string) {
    super(problem ? `${status} ${problem.code}: ${problem.detail}` : `${status} ${fallback}`);
    this.name = 'HwrApiError';
    this.status = status;
    this.problem = problem;
  }
  get code(): string | null {
    return this.problem?.code ?? null;
  }
  /** The problem's `retryable` (docs/contract.md, "Error codes"); null without a problem body. */
  get retryable(): boolean | null {
    return typeof this.problem?.retryable === 'boolean' ? this.problem.retryable : null;
  }
}

const RETRY_STATUSES = new Set([429, 503]);

function zipBlob(zip: string | Blob | Uint8Array): Promise<Blob> | Blob {
  if (typeof zip === 'string') return openAsBlob(zip, { type: 'application/zip' });
  return zip instanceof Blob ? zip : new Blob([zip as Uint8Array<ArrayBuffer>], { type: 'application/zip' });
}
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

export class HwrClient {
  readonly url: string;
  readonly #apiKey: string;
  readonly #retries: number;
  readonly #maxRetryWaitMs: number;
  readonly #onRetry: HwrClientOptions['onRetry'];
  readonly #fetch: typeof fetch;

  constructor(options: HwrClientOptions) {
    this.url = options.url.replace(/\/+$/, '');
    this.#apiKey = options.apiKey;
    this.#retries = options.retries ?? 5;
    this.#maxRetryWaitMs = options.maxRetryWaitMs ?? 60_000;
    this.#onRetry = options.onRetry;
    this.#fetch = options.fetch ?? fetch;
  }

  /** POST /v1/process-scan. `scan`: a ZIP as a file path, a Blob or bytes. */
  async submit(scan: string | Blob | Uint8Array, request: SubmitRequest = {}): Promise<Submission> {
    const blob = await zipBlob(scan);
    const filename = request.filename ?? (typeof scan === 'string' ? path.basename(scan) : 'scan.zip');
    const idempotencyKey = request.idempotencyKey ?? randomUUID();
    const form = () => {
      const body = new FormData();
      body.set('scan_zip', blob, filename);
      for (const field of ['llm_tier', 'preset', 'pipeline_steps', 'pdf_format', 'webhook_url', 'model'] as const) {
        const value = request[field];
        if (value !== undefined) body.set(field, value);
      }
      return body;
    };
    const response = await this.#request('POST', '/v1/process-scan', {
      body: form,
      headers: { 'Idempotency-Key': idempotencyKey },
      repeatable: true,
      signal: request.signal,
    });
    return (await response.json()) as Submission;
  }

  async status(jobId: string, signal?: AbortSignal): Promise<JobStatus> {
    return this.#json<JobStatus>('GET', `/v1/process-scan/${encodeURIComponent(jobId)}`, signal);
  }

  /** DELETE: cancels a queued or processing job (409 once it is done or failed). */
  async cancel(jobId: string, signal?: AbortSignal): Promise<JobStatus> {
    return this.#json<JobStatus>('DELETE', `/v1/process-scan/${encodeURIComponent(jobId)}`, signal);
  }

  async events(jobId: string, signal?: AbortSignal): Promise<JobEvents> {
    return this.#json<JobEvents>('GET', `/v1/process-scan/${encodeURIComponent(jobId)}/events`, signal);
  }

  async usage(range: { from?: string; to?: string } = {}, signal?: AbortSignal): Promise<Usage> {
    const query = new URLSearchParams(Object.entries(range).filter((entry): entry is [string, string] => typeof entry[1] === 'string'));
    return this.#json<Usage>('GET', `/v1/usage${query.size > 0 ? `?${query}` : ''}`, signal);
  }

  /**
   * POST /v1/models: uploads ground truth (a ZIP of page images with their PageXML or ALTO files,
   * as a file path, a Blob or bytes) and queues a training. Not repeated on a network error: the
   * service has no Idempotency-Key for trainings, and a repeat would queue a second one.
   */
  async trainModel(groundTruth: string | Blob | Uint8Array, request: TrainRequest = {}): Promise<ModelSubmission> {
    const blob = await zipBlob(groundTruth);
    const filename = request.filename ?? (typeof groundTruth === 'string' ? path.basename(groundTruth) : 'ground-truth.zip');
    const form = () => {
      const body = new FormData();
      for (const field of ['label', 'base_model'] as const) {
        const value = request[field];
        if (value !== undefined) body.set(field, value);
      }
      body.set('training_zip', blob, filename);
      return body;
    };
    const response = await this.#request('POST', '/v1/models', { body: form, repeatable: false, signal: request.signal });
    return (await response.json()) as ModelSubmission;
  }

  /** GET /v1/models: the account's models, newest first. */
  async models(signal?: AbortSignal): Promise<ModelList> {
    return this.#json<ModelList>('GET', '/v1/models', signal);
  }

  async model(modelId: string, signal?: AbortSignal): Promise<ModelStatus> {
    return this.#json<ModelStatus>('GET', `/v1/models/${encodeURIComponent(modelId)}`, signal);
  }

  /** DELETE: cancels a queued or training model, retires a ready one (409 for a failed one). */
  async retireModel(modelId: string, signal?: AbortSignal): Promise<ModelStatus> {
    return this.#json<ModelStatus>('DELETE', `/v1/models/${encodeURIComponent(modelId)}`, signal);
  }

  /** Polls until the model is ready, failed, cancelled or retired; returns its last status. */
  async waitForModel(modelId: string, options: WaitOptions<ModelStatus> = {}): Promise<ModelStatus> {
    return this.#poll(
      (signal) => this.model(modelId, signal),
      (status) => `${status.state}|${status.progress?.epoch ?? ''}`,
      (status) => MODEL_END_STATES.includes(status.state),
      options,
    );
  }

  /** Polls until the job is done, failed or cancelled; returns its last status. */
  async wait(jobId: string, options: WaitOptions = {}): Promise<JobStatus> {
    return this.#poll(
      (signal) => this.status(jobId, signal),
      (status) => `${status.state}|${status.pages_done}|${status.current_step}`,
      (status) => TERMINAL_STATES.includes(status.state),
      options,
    );
  }

  async #poll<Status>(
    read: (signal?: AbortSignal) => Promise<Status>,
    changeKey: (status: Status) => string,
    ended: (status: Status) => boolean,
    options: WaitOptions<Status>,
  ): Promise<Status> {
    let last = '';
    let unreachableSince: number | null = null;
    for (;;) {
      let status: Status;
      try {
        status = await read(options.signal);
        unreachableSince = null;
      } catch (error) {
        if (options.signal?.aborted || !isOutage(error)) throw error;
        if (unreachableSince === null) {
          unreachableSince = Date.now();
          options.onOutage?.(causeOf(error));
        }
        if (Date.now() - unreachableSince > (options.outageMs ?? DEFAULT_OUTAGE_MS)) throw error;
        await sleep(OUTAGE_POLL_MS, options.signal);
        continue;
      }
      const key = changeKey(status);
      if (key !== last) options.onChange?.(status);
      last = key;
      if (ended(status)) return status;
      await sleep(options.intervalMs ?? 1000, options.signal);
    }
  }

  /**
   * Downloads the result archive to `file` (through `file.part`, renamed when complete),
   * following redirects (the API key goes only to the service's own origin), and checks its
   * size against Content-Length.
   */
  async downloadResult(
    jobId: string,
    file: string,
    options: { signal?: AbortSignal; onProgress?: (bytes: number, total: number | null) => void } = {},
  ): Promise<{ path: string; bytes: number }> {
    const response = await this.#request('GET', `/v1/process-scan/${encodeURIComponent(jobId)}/result`, {
      repeatable: true,
      signal: options.signal,
      followRedirects: true,
    });
    const declared = response.headers.get('content-length');
    const total = declared === null ? null : Number(declared);
    const partial = `${file}.part`;
    let bytes = 0;
    const count = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        bytes += chunk.length;
        options.onProgress?.(bytes, total);
        done(null, chunk);
      },
    });
    try {
      if (!response.body) throw new Error('the result answer has no body');
      await pipeline(Readable.fromWeb(response.body as WebReadableStream<Uint8Array>), count, createWriteStream(partial), {
        signal: options.signal,
      });
      if (total !== null && bytes !== total) throw new Error(`the result download ended after ${bytes} of ${total} bytes`);
      await rename(partial, file);
    } catch (error) {
      await rm(partial, { force: true });
      throw error;
    }
    return { path: file, bytes };
  }

  async #json<T>(method: string, pathAndQuery: string, signal?: AbortSignal): Promise<T> {
    const response = await this.#request(method, pathAndQuery, { repeatable: true, signal });
    return (await response.json()) as T;
  }

  async #request(
    method: string,
    pathAndQuery: string,
    options: {
      body?: () => FormData;
      headers?: Record<string, string>;
      repeatable: boolean;
      signal?: AbortSignal;
      followRedirects?: boolean;
    },
  ): Promise<Response> {
    for (let attempt = 1; ; attempt++) {
      let response: Response;
      try {
        response = await this.#send(method, `${this.url}${pathAndQuery}`, options);
      } catch (error) {
        if (options.signal?.aborted || !options.repeatable || attempt > this.#retries) throw error;
        await this.#pause(attempt, backoffMs(attempt), `network error: ${causeOf(error)}`, options.signal);
        continue;
      }
      if (response.ok) return response;
      if (RETRY_STATUSES.has(response.status) && attempt <= this.#retries) {
        // A 503 the service marks not retryable (`training_unavailable`: no trainer can run there)
        // is the answer, not an outage to wait out.
        if (response.status === 503) {
          const error = await apiError(response);
          if (error.retryable === false) throw error;
        } else await response.body?.cancel().catch(() => {});
        const wait = retryAfterMs(response.headers.get('retry-after')) ?? backoffMs(attempt);
        await this.#pause(attempt, wait, `${response.status}`, options.signal);
        continue;
      }
      throw await apiError(response);
    }
  }

  async #send(
    method: string,
    url: string,
    options: { body?: () => FormData; headers?: Record<string, string>; signal?: AbortSignal; followRedirects?: boolean },
  ): Promise<Response> {
    const origin = new URL(url).origin;
    let target = url;
    for (let hop = 0; ; hop++) {
      const sameOrigin = new URL(target).origin === origin;
      const response = await this.#fetch(target, {
        method: hop === 0 ? method : 'GET',
        headers: {
          Accept: 'application/json, application/zip',
          ...(sameOrigin ? { 'X-API-Key': this.#apiKey } : {}),
          ...(hop === 0 ? options.headers : {}),
        },
        body: hop === 0 ? options.body?.() : undefined,
        redirect: 'manual',
        signal: options.signal,
      });
      const location = response.headers.get('location');
      if (!options.followRedirects || !REDIRECT_STATUSES.has(response.status) || !location) return response;
      if (hop >= 5) throw new Error(`more than 5 redirects from ${url}`);
      await response.body?.cancel().catch(() => {});
      target = new URL(location, target).toString();
    }
  }

  async #pause(attempt: number, waitMs: number, reason: string, signal?: AbortSignal): Promise<void> {
    const capped = Math.min(waitMs, this.#maxRetryWaitMs);
    this.#onRetry?.({ attempt, waitMs: capped, reason });
    await sleep(capped, signal);
  }
}

/** Retry-After as milliseconds: delta-seconds or an HTTP date; null when absent or unreadable. */
export function retryAfterMs(header: string | null, now = Date.now()): number | null {
  if (header === null || header.trim() === '') return null;
  if (/^\d+$/.test(header.trim())) return Number(header.trim()) * 1000;
  const date = Date.parse(header);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

/** 0.5, 1, 2, 4 … s (capped at 30 s), with jitter. */
function backoffMs(attempt: number): number {
  return Math.min(30_000, 500 * 2 ** (attempt - 1)) * (0.5 + Math.random() / 2);
}

async function apiError(response: Response): Promise<HwrApiError> {
  const text = await response.text().catch(() => '');
  let problem: Problem | null = null;
  try {
    const parsed = JSON.parse(text);
    if (parsed && typeof parsed.code === 'string') problem = parsed as Problem;
  } catch {
    // not JSON: a proxy's page, say
  }
  return new HwrApiError(response.status, problem, response.statusText || text.slice(0, 200));
}

function causeOf(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as Error & { cause?: unknown }).cause;
    return cause instanceof Error ? cause.message : error.message;
  }
  return String(error);
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
