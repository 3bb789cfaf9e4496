// How many times the event loop turns while `work` runs: a few where the work holds the thread
// (a turn or two around its awaits), thousands where it runs elsewhere (a worker thread).
export async function turnsDuring<T>(work: () => Promise<T>): Promise<{ value: T; turns: number }> {
  let turns = 0;
  let running = true;
  const spin = () => {
    if (!running) return;
    turns += 1;
    setImmediate(spin);
  };
  setImmediate(spin);
  try {
    return { value: await work(), turns };
  } finally {
    running = false;
  }
}
