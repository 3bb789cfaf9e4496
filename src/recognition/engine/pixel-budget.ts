// Memory admission for pages: a page reserves its pixel count (read from the image header,
// before anything is decoded) against a per-process budget, and waits while the pages in
// flight hold it. Decoded rasters dominate a page's memory, so the budget bounds the
// process's peak where WORKER_CONCURRENCY alone does not (four 100 Mpx pages at once took
// 1.1 GB more than four ordinary ones). Pages wait, in order; they never fail for it, and a
// page larger than the whole budget runs alone.
export class PixelBudget {
  readonly capacity: number;
  private inFlight = 0;
  private readonly waiting: Array<{ pixels: number; grant: () => void }> = [];

  constructor(capacity: number) {
    if (!Number.isFinite(capacity) || capacity < 1) throw new RangeError(`a pixel budget must be positive, got ${capacity}`);
    this.capacity = capacity;
  }

  /** Pixels reserved by the pages in flight now. */
  get reserved(): number {
    return this.inFlight;
  }

  /** Runs `work` once `pixels` fit (alone, when they exceed the budget). */
  async run<T>(pixels: number, work: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    const held = Math.min(Math.max(1, Math.ceil(pixels)), this.capacity);
    await this.reserve(held, signal);
    try {
      return await work();
    } finally {
      this.inFlight -= held;
      this.grantWaiting();
    }
  }

  private reserve(pixels: number, signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    // First come, first served: a large page is not overtaken for ever by small ones.
    if (this.waiting.length === 0 && this.inFlight + pixels <= this.capacity) {
      this.inFlight += pixels;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const entry = {
        pixels,
        grant: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        const index = this.waiting.indexOf(entry);
        if (index >= 0) this.waiting.splice(index, 1);
        this.grantWaiting();
        reject(signal?.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(entry);
    });
  }

  private grantWaiting(): void {
    while (this.waiting.length > 0 && this.inFlight + this.waiting[0].pixels <= this.capacity) {
      const next = this.waiting.shift()!;
      this.inFlight += next.pixels;
      next.grant();
    }
  }
}

/** Bytes of memory one pixel in flight stands for (the RGB raster and what layout derives from it). */
export const BYTES_PER_PIXEL_IN_FLIGHT = 4;

/** A quarter of the memory this process may use, in pixels. */
export function defaultPixelBudget(memoryBytes: number): number {
  return Math.max(1, Math.floor(memoryBytes / 4 / BYTES_PER_PIXEL_IN_FLIGHT));
}
