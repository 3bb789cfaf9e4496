// Page work that runs on the main thread (cropping lines, the beam search, baselines) is synchronous
// JavaScript, and a process that serves HTTP and runs pages at once (`hwr serve`, what `npm start`
// runs) answers no request while it runs: hundreds of milliseconds per page step. Long loops call
// the pause this returns after each item; once a slice of `sliceMs` has passed it gives the event
// loop a turn (setImmediate: after pending I/O), so requests wait at most about one slice plus
// one item, and a loop that is fast anyway pays nothing.

type EventLoopPause = () => Promise<void> | undefined;

const DEFAULT_SLICE_MS = 10;

export function eventLoopSlices(sliceMs = DEFAULT_SLICE_MS): EventLoopPause {
  let sliceStart = performance.now();
  return () => {
    if (performance.now() - sliceStart < sliceMs) return undefined;
    return new Promise<void>((resolve) =>
      setImmediate(() => {
        sliceStart = performance.now();
        resolve();
      }),
    );
  };
}

/** `items.map(work)`, giving the event loop a turn between items once a slice has passed. */
export async function mapInSlices<T, R>(items: readonly T[], work: (item: T, index: number) => R, pause = eventLoopSlices()): Promise<R[]> {
  const out: R[] = [];
  for (let index = 0; index < items.length; index++) {
    out.push(work(items[index], index));
    await pause();
  }
  return out;
}
