import assert from 'node:assert/strict';
import { test } from 'node:test';
import { backoffDelay, MIN_CALL_MS, ProviderError, RetriesEnded, retryAfterMs, withRetry } from '../../src/recognition/correction/retry.ts';

const policy = { retries: 3, baseDelayMs: 1, maxWaitMs: 1000 };
const transient = (retryAfter: number | null = null) =>
  new ProviderError('busy', { transient: true, status: 503, retryAfterMs: retryAfter });

test('Retry-After is read as seconds, as an HTTP date, and as retry-after-ms', () => {
  const now = Date.parse('2025-01-01T00:00:00Z');
  assert.equal(retryAfterMs(new Headers({ 'retry-after': '2' }), now), 2000);
  assert.equal(retryAfterMs(new Headers({ 'retry-after': '0.5' }), now), 500);
  assert.equal(retryAfterMs(new Headers({ 'retry-after': 'Wed, 01 Jan 2025 00:00:07 GMT' }), now), 7000);
  assert.equal(retryAfterMs(new Headers({ 'retry-after': 'Tue, 31 Dec 2024 23:00:00 GMT' }), now), 0);
  assert.equal(retryAfterMs(new Headers({ 'retry-after-ms': '250', 'retry-after': '9' }), now), 250);
  assert.equal(retryAfterMs(new Headers({ 'retry-after': 'soon' }), now), null);
  assert.equal(retryAfterMs(new Headers(), now), null);
  assert.equal(retryAfterMs(undefined, now), null);
});

test('backoff doubles with equal jitter and stays under the cap', () => {
  const settings = { retries: 5, baseDelayMs: 1000, maxWaitMs: 5000 };
  assert.equal(
    backoffDelay(0, settings, () => 0),
    500,
  );
  assert.equal(
    backoffDelay(0, settings, () => 1),
    1000,
  );
  assert.equal(
    backoffDelay(2, settings, () => 0),
    2000,
  );
  assert.equal(
    backoffDelay(2, settings, () => 1),
    4000,
  );
  assert.equal(
    backoffDelay(5, settings, () => 1),
    5000,
  );
});

test('transient failures are retried until the call succeeds', async () => {
  const retries: number[] = [];
  let calls = 0;
  const value = await withRetry(
    async () => {
      calls++;
      if (calls < 3) throw transient();
      return 'ok';
    },
    policy,
    new AbortController().signal,
    ({ attempt }) => retries.push(attempt),
  );
  assert.equal(value, 'ok');
  assert.equal(calls, 3);
  assert.deepEqual(retries, [1, 2]);
});

test("the provider's Retry-After replaces the backoff", async () => {
  const waits: number[] = [];
  let calls = 0;
  const started = performance.now();
  await withRetry(
    async () => {
      if (++calls === 1) throw transient(120);
      return 'ok';
    },
    policy,
    new AbortController().signal,
    ({ waitMs }) => waits.push(waitMs),
  );
  assert.deepEqual(waits, [120]);
  assert.ok(performance.now() - started >= 115);
});

test('retries end: not retryable, exhausted, or asked to wait too long', async () => {
  const signal = new AbortController().signal;
  const outcome = async (error: () => ProviderError) => {
    let calls = 0;
    const failure = await withRetry(
      async () => {
        calls++;
        throw error();
      },
      policy,
      signal,
    ).catch((caught: unknown) => caught);
    assert.ok(failure instanceof RetriesEnded);
    return { calls, reason: failure.reason, attempts: failure.attempts };
  };
  assert.deepEqual(await outcome(() => new ProviderError('bad key', { transient: false, status: 401 })), {
    calls: 1,
    reason: 'not retryable',
    attempts: 1,
  });
  assert.deepEqual(await outcome(() => transient()), { calls: 4, reason: 'retries exhausted', attempts: 4 });
  assert.deepEqual(await outcome(() => transient(3_600_000)), { calls: 1, reason: 'wait too long', attempts: 1 });
});

test('with a deadline, no call starts with less than MIN_CALL_MS left, a wait that would pass it ends the retries, and a call learns the time left', async () => {
  const signal = new AbortController().signal;
  // Past the deadline already: no call at all.
  const late = await withRetry(async () => 'never', policy, signal, undefined, Date.now() + MIN_CALL_MS - 1).catch(
    (caught: unknown) => caught,
  );
  assert.ok(late instanceof RetriesEnded);
  assert.deepEqual([late.reason, late.attempts], ['out of time', 0]);
  assert.match(late.message, /no time left before the page task's expiry \(out of time after 0 attempts\)/);
  // A failure whose wait (Retry-After 9.5 s) would end past the deadline (10 s away): one call,
  // and no wait (which would take the 9.5 s).
  const left: number[] = [];
  const retryAfterMs = 9_500;
  const setAt = Date.now();
  const deadline = setAt + 10_000;
  const waited = await withRetry(
    async (_attempt, msLeft) => {
      left.push(msLeft);
      throw transient(retryAfterMs);
    },
    { ...policy, maxWaitMs: 10_000 },
    signal,
    undefined,
    deadline,
  ).catch((caught: unknown) => caught);
  const endedAt = Date.now();
  assert.ok(waited instanceof RetriesEnded);
  assert.deepEqual([waited.reason, waited.attempts], ['out of time', 1]);
  assert.ok(endedAt - setAt < retryAfterMs, `it did not wait: ended after ${endedAt - setAt} ms`);
  assert.equal(left.length, 1);
  // The call learnt the time left when it started: between setting the deadline and the end.
  assert.ok(left[0] <= deadline - setAt && left[0] >= deadline - endedAt, String(left[0]));
  // Short waits go on until the time is up: the retries end only once a 100 ms wait and a call's
  // MIN_CALL_MS no longer fit before the deadline; without it there would be 101 calls.
  let calls = 0;
  const shortDeadline = Date.now() + MIN_CALL_MS + 2_000;
  const short = await withRetry(
    async () => {
      calls++;
      throw transient(100);
    },
    { ...policy, retries: 100 },
    signal,
    undefined,
    shortDeadline,
  ).catch((caught: unknown) => caught);
  const shortEndedAt = Date.now();
  assert.ok(short instanceof RetriesEnded);
  assert.equal(short.reason, 'out of time');
  assert.ok(
    shortEndedAt + 100 + MIN_CALL_MS > shortDeadline,
    `ended ${shortDeadline - shortEndedAt} ms before the deadline, with time left`,
  );
  // At most one call per 100 ms wait that fits (2 s of them), at least the first and one retry.
  assert.ok(calls >= 2 && calls <= 2_000 / 100 + 1, `${calls} calls`);
});

test('other errors and an abort during a wait propagate', async () => {
  await assert.rejects(
    withRetry(async () => Promise.reject(new TypeError('bug')), policy, new AbortController().signal),
    TypeError,
  );
  const controller = new AbortController();
  const pending = withRetry(async () => Promise.reject(transient(500)), policy, controller.signal);
  setTimeout(() => controller.abort(new Error('job cancelled')), 20);
  await assert.rejects(pending, { message: 'job cancelled' });
});
