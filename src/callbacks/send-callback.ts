// One delivery attempt of a signed job callback (docs/callbacks.md). Retries are the
// caller's (the callback worker); this sends once and reports, and never throws.
//
// The address is checked again here, and the connection goes to exactly the addresses
// that were checked (a pinned `lookup`), so a host cannot pass the check with a public
// address and then be re-resolved to an internal one (DNS rebinding).
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import packageJson from '../../package.json' with { type: 'json' };
import { SIGNATURE_HEADER, signCallbackBody } from './signature.ts';
import { isWebhookUrlError, resolveWebhookTarget, type ResolvedAddress, type WebhookLookup } from './webhook-url.ts';
import { callbackAttempts, callbackOutcomeLabel } from '../metrics/metrics.ts';

export type CallbackEvent = 'job.completed' | 'job.failed';

export const DEFAULT_CALLBACK_TIMEOUT_MS = 10_000;
export const CALLBACK_USER_AGENT = `hwr-webhooks/${packageJson.version}`;
/** Response bodies are read (and discarded) up to this size; only the status matters. */
const MAX_RESPONSE_BYTES = 64 * 1024;

export interface SendCallbackOptions {
  url: string;
  /** The exact bytes to send; the signature is computed over them. */
  body: Buffer;
  /** The account's webhook secret (64 hex characters), used as written. */
  secret: string;
  event: CallbackEvent;
  /** Same on every attempt of one delivery (X-SVC-Delivery). */
  deliveryId: string;
  /** Whole attempt: address check, connection, TLS, request, response status. */
  timeoutMs?: number;
  allowHttp: boolean;
  allowPrivate: boolean;
  /** Replaces DNS resolution (tests; a custom resolver). */
  lookup?: WebhookLookup;
  /** CA certificates to trust for https instead of Node's default store (a private CA; tests). */
  ca?: string | Buffer | Array<string | Buffer>;
  /** Aborts the attempt (worker shutdown). */
  signal?: AbortSignal;
}

export interface CallbackOutcome {
  /** True for a 2xx answer: delivery done. */
  ok: boolean;
  /** The HTTP status, or null when none was received. */
  status: number | null;
  /** Why the attempt failed, for the attempt's event; null when ok. */
  error: string | null;
  /** The server setting behind a refused address (WEBHOOK_ALLOW_PRIVATE…), for the operator's log, never the event. */
  setting?: string;
  durationMs: number;
}

export async function sendCallback(options: SendCallbackOptions): Promise<CallbackOutcome> {
  const started = performance.now();
  const outcome = (status: number | null, error: string | null): CallbackOutcome => {
    const result = {
      ok: error === null && status !== null && status >= 200 && status < 300,
      status,
      error,
      durationMs: performance.now() - started,
    };
    callbackAttempts.inc({ outcome: callbackOutcomeLabel(result) });
    return result;
  };
  const timeoutMs = options.timeoutMs ?? DEFAULT_CALLBACK_TIMEOUT_MS;
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = options.signal ? AbortSignal.any([timeout, options.signal]) : timeout;
  const whyAborted = () => (timeout.aborted ? `timeout after ${timeoutMs} ms` : 'aborted');

  try {
    const target = await untilAborted(
      resolveWebhookTarget(options.url, { allowHttp: options.allowHttp, allowPrivate: options.allowPrivate, lookup: options.lookup }),
      signal,
    );
    if (target === null) return outcome(null, whyAborted());
    const { status, error } = await post(target.url, target.hostname, target.addresses, options, signal);
    if (error !== null) return outcome(status, error === 'aborted' ? whyAborted() : error);
    if (status !== null && status >= 300 && status < 400) return outcome(status, `HTTP ${status} (redirects are not followed)`);
    if (status !== null && (status < 200 || status >= 300)) return outcome(status, `HTTP ${status}`);
    return outcome(status, null);
  } catch (error) {
    if (isWebhookUrlError(error)) return { ...outcome(null, `invalid_webhook_url: ${error.detail}`), setting: error.setting };
    return outcome(null, describeError(error));
  }
}

function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T | null> {
  if (signal.aborted) return Promise.resolve(null);
  return new Promise((resolve, reject) => {
    const onAbort = () => resolve(null);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/** A `lookup` for node:net that answers only with the addresses already checked. */
function pinnedLookup(addresses: ResolvedAddress[]): LookupFunction {
  return (_hostname, lookupOptions, callback) => {
    const wanted = lookupOptions.family === 4 || lookupOptions.family === 6 ? lookupOptions.family : 0;
    const usable = wanted === 0 ? addresses : addresses.filter((entry) => entry.family === wanted);
    if (usable.length === 0) {
      const error = Object.assign(new Error(`no checked IPv${wanted} address`), { code: 'ENOTFOUND' });
      callback(error, '', 0);
      return;
    }
    if (lookupOptions.all) {
      (callback as unknown as (error: null, addresses: ResolvedAddress[]) => void)(null, usable);
    } else {
      callback(null, usable[0].address, usable[0].family);
    }
  };
}

function post(
  url: URL,
  hostname: string,
  addresses: ResolvedAddress[],
  options: SendCallbackOptions,
  signal: AbortSignal,
): Promise<{ status: number | null; error: string | null }> {
  return new Promise((resolve) => {
    let status: number | null = null;
    let settled = false;
    const settle = (error: string | null) => {
      if (settled) return;
      settled = true;
      resolve({ status, error });
    };

    const request = (url.protocol === 'https:' ? https : http).request({
      protocol: url.protocol,
      hostname,
      port: url.port === '' ? undefined : Number(url.port),
      path: `${url.pathname}${url.search}`,
      method: 'POST',
      agent: false,
      lookup: pinnedLookup(addresses),
      ca: options.ca,
      signal,
      headers: {
        'Content-Type': 'application/json',
        'Content-Length': String(options.body.length),
        'User-Agent': CALLBACK_USER_AGENT,
        'X-SVC-Event': options.event,
        [SIGNATURE_HEADER]: signCallbackBody(options.secret, options.body),
        'X-SVC-Delivery': options.deliveryId,
      },
    });
    request.on('response', (response) => {
      status = response.statusCode ?? null;
      let received = 0;
      response.on('data', (chunk: Buffer) => {
        received += chunk.length;
        if (received > MAX_RESPONSE_BYTES) {
          response.destroy();
          settle(null);
        }
      });
      response.on('end', () => settle(null));
      // Once the status is known, a body cut short or too slow no longer matters.
      response.on('error', () => settle(null));
      response.on('close', () => settle(null));
    });
    request.on('error', (error) => settle(status !== null ? null : signal.aborted ? 'aborted' : describeError(error)));
    request.end(options.body);
  });
}

function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as NodeJS.ErrnoException).code;
  return code && !error.message.includes(code) ? `${code}: ${error.message}` : error.message;
}
