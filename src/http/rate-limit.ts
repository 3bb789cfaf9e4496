// Per-API-key request rate: a token bucket per key, in this process's memory (docs/operations.md,
// "Limits"). A key may send `burst` requests at once and `perSecond` a second after that; a
// request finding the bucket empty gets 429 `rate_limited` with Retry-After, the seconds until a
// token is back. Behind a balancer with N API processes a key gets up to N times the rate.
import { HttpProblem } from './problem.ts';

export interface RateLimitSettings {
  /** Tokens added per second; 0: no limit. */
  perSecond: number;
  /** Bucket size: requests a key may send at once after a pause. */
  burst: number;
}

interface Bucket {
  tokens: number;
  /** When `tokens` was last brought up to date (ms). */
  at: number;
}

/** Buckets full again are forgotten when there are more than this many (a full bucket and none are the same). */
const SWEEP_ABOVE = 10_000;

export class RateLimiter {
  private readonly settings: RateLimitSettings;
  private readonly now: () => number;
  private readonly buckets = new Map<string, Bucket>();

  constructor(settings: RateLimitSettings, now: () => number = Date.now) {
    this.settings = settings;
    this.now = now;
  }

  /** Takes one token of `key`'s bucket: 0 when there was one, else the seconds until there is one. */
  take(key: string): number {
    const { perSecond, burst } = this.settings;
    if (perSecond <= 0) return 0;
    const now = this.now();
    let bucket = this.buckets.get(key);
    if (!bucket) {
      if (this.buckets.size >= SWEEP_ABOVE) this.sweep(now);
      bucket = { tokens: burst, at: now };
      this.buckets.set(key, bucket);
    }
    bucket.tokens = Math.min(burst, bucket.tokens + ((now - bucket.at) / 1000) * perSecond);
    bucket.at = now;
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return (1 - bucket.tokens) / perSecond;
  }

  /** The 429 `rate_limited` answer to a request that must wait `waitSeconds` (from `take`); `who` sent it. */
  refusal(waitSeconds: number, who = 'This API key'): HttpProblem {
    const { perSecond, burst } = this.settings;
    return new HttpProblem(
      'rate_limited',
      `${who} sent more than ${burst} requests at once or ${perSecond} a second; retry after Retry-After seconds.`,
      { headers: { 'Retry-After': String(Math.max(1, Math.ceil(waitSeconds))) } },
    );
  }

  private sweep(now: number): void {
    const { perSecond, burst } = this.settings;
    for (const [key, bucket] of this.buckets) {
      if (bucket.tokens + ((now - bucket.at) / 1000) * perSecond >= burst) this.buckets.delete(key);
    }
  }
}
