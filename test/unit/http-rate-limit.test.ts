// The per-key token bucket (src/http/rate-limit.ts) on a clock the test moves.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RateLimiter } from '../../src/http/rate-limit.ts';

function limiter(perSecond: number, burst: number) {
  let now = 1_000_000;
  const limits = new RateLimiter({ perSecond, burst }, () => now);
  return { limits, advance: (ms: number) => (now += ms) };
}

test('a key sends its burst at once, then perSecond a second; each key has its own bucket', () => {
  const { limits, advance } = limiter(2, 3);
  assert.deepEqual(
    [1, 2, 3].map(() => limits.take('a')),
    [0, 0, 0],
  );
  assert.equal(limits.take('a'), 0.5, 'the fourth waits half a second for its token');
  assert.equal(limits.take('b'), 0, 'another key is not held back');
  advance(499);
  assert.ok(limits.take('a') > 0);
  advance(1);
  assert.equal(limits.take('a'), 0);
  assert.ok(limits.take('a') > 0);
  advance(10_000);
  assert.deepEqual(
    [1, 2, 3, 4].map(() => limits.take('a') === 0),
    [true, true, true, false],
    'a pause refills the burst, no more',
  );
});

test('perSecond 0 is no limit', () => {
  const { limits } = limiter(0, 1);
  for (let i = 0; i < 1000; i++) assert.equal(limits.take('a'), 0);
});

test('the refusal is 429 rate_limited with Retry-After in whole seconds, at least 1', () => {
  const { limits } = limiter(0.25, 1);
  assert.equal(limits.take('a'), 0);
  const wait = limits.take('a');
  assert.equal(wait, 4);
  const problem = limits.refusal(wait);
  assert.equal(problem.status, 429);
  assert.equal(problem.code, 'rate_limited');
  assert.equal(problem.retryable, true);
  assert.deepEqual(problem.headers, { 'Retry-After': '4' });
  assert.deepEqual(limits.refusal(0.01).headers, { 'Retry-After': '1' });
});
