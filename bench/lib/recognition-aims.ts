// bench:recognize's in-process aims (issue 43): one process reading one page at a time on the
// machine's cores takes at most 0.9 s a handwritten page and 1.5 s a printed one, and its peak RSS
// is at most 600 MB. Printed beside the figures, never asserted: they say where the aims stand on
// the machine the benchmark ran on (docs/benchmarks.md, "How much these figures move on their own").

interface InProcessFigures {
  /** Mean seconds a page of each kind; null where the run had no page of that kind. */
  handwrittenSeconds: number | null;
  printedSeconds: number | null;
  peakBytes: number;
}

const IN_PROCESS_AIMS = { handwrittenSeconds: 0.9, printedSeconds: 1.5, peakMB: 600 } as const;

/** One line per aim; MB as bench:recognize prints them (2^20 bytes). */
export function inProcessAimLines(figures: InProcessFigures): string[] {
  const judged = (value: number, aim: number): string => (value <= aim ? 'met' : 'not met');
  const lines: string[] = [];
  for (const [kind, seconds, aim] of [
    ['handwritten', figures.handwrittenSeconds, IN_PROCESS_AIMS.handwrittenSeconds],
    ['printed', figures.printedSeconds, IN_PROCESS_AIMS.printedSeconds],
  ] as const) {
    if (seconds !== null) lines.push(`- a ${kind} page: ${seconds.toFixed(2)} s; aim: at most ${aim} s — ${judged(seconds, aim)}`);
  }
  const peakMB = figures.peakBytes / 1024 / 1024;
  lines.push(
    `- peak memory (RSS): ${peakMB.toFixed(0)} MB; aim: at most ${IN_PROCESS_AIMS.peakMB} MB — ${judged(peakMB, IN_PROCESS_AIMS.peakMB)}`,
  );
  return lines;
}
