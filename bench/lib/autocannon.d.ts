// The part of autocannon's API that bench/http-status.ts uses (autocannon ships no types).
declare module 'autocannon' {
  interface Histogram {
    average: number;
    mean: number;
    p50: number;
    p90: number;
    p99: number;
    max: number;
  }
  interface Result {
    requests: Histogram & { total: number };
    latency: Histogram;
    errors: number;
    timeouts: number;
    non2xx: number;
  }
  interface Options {
    url: string;
    headers?: Record<string, string>;
    connections?: number;
    duration?: number;
    pipelining?: number;
    method?: string;
    body?: string | Buffer;
  }
  function autocannon(options: Options): Promise<Result>;
  export default autocannon;
}
