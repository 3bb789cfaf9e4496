// A fixed number of workers over a list: how the peers are run at scale (one single-threaded
// tesseract per core, as OCRmyPDF does), and how bench:throughput submits concurrent jobs.

/** `work` on every item, at most `concurrency` at once, each next item started as one ends; results in the items' order. */
export async function mapPool<T, R>(items: readonly T[], concurrency: number, work: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index] as T, index);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(Math.floor(concurrency) || 1, items.length)) }, worker));
  return results;
}
