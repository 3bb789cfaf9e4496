// bench:throughput's table: each run's pages per second end to end, and ours against the peers
// on the same pages in the same run (issue 43's aims: within 1.5× of Tesseract's text-only
// throughput, at least 5× OCRmyPDF's).
import { markdownTable } from './table.ts';

export interface ThroughputRow {
  label: string;
  /** `ours` rows get the ratio columns; peers are the denominators. */
  role: 'ours' | 'tesseract' | 'ocrmypdf';
  pages: number;
  seconds: number;
  /** CPU seconds (user + system) of every process of the run, where known. */
  cpuSeconds: number | null;
  /** Seconds from the start to the first page done, where known. */
  firstPageSeconds: number | null;
  /** Peak resident memory in MiB, and how it was taken (e.g. "service process", "per process × 2"). */
  peakMiB: number | null;
  peakNote?: string;
}

const pagesPerSecond = (row: ThroughputRow): number => row.pages / Math.max(1e-9, row.seconds);

/** Ours ÷ the peer in pages per second (above 1: ours is faster), or '' where either is missing. */
function throughputRatio(ours: ThroughputRow, peer: ThroughputRow | undefined): string {
  return peer ? `${(pagesPerSecond(ours) / pagesPerSecond(peer)).toFixed(2)}×` : '';
}

export function throughputTable(rows: readonly ThroughputRow[]): string {
  const tesseract = rows.find((row) => row.role === 'tesseract');
  const ocrmypdf = rows.find((row) => row.role === 'ocrmypdf');
  return markdownTable(
    [
      'run',
      'pages',
      'wall s',
      'pages/s',
      's/page',
      'CPU s/page',
      'first page done s',
      'peak RSS MiB',
      "÷ Tesseract's pages/s",
      "÷ OCRmyPDF's pages/s",
    ],
    rows.map((row) => [
      row.label,
      String(row.pages),
      row.seconds.toFixed(1),
      pagesPerSecond(row).toFixed(3),
      (row.seconds / Math.max(1, row.pages)).toFixed(2),
      row.cpuSeconds === null ? 'n/a' : (row.cpuSeconds / Math.max(1, row.pages)).toFixed(2),
      row.firstPageSeconds === null ? '–' : row.firstPageSeconds.toFixed(1),
      row.peakMiB === null ? 'n/a' : `${row.peakMiB.toFixed(0)}${row.peakNote ? ` (${row.peakNote})` : ''}`,
      row.role === 'ours' ? throughputRatio(row, tesseract) : '',
      row.role === 'ours' ? throughputRatio(row, ocrmypdf) : '',
    ]),
  );
}

/** The aims against the best warm row of ours (most pages per second), one line each. */
export function aimLines(rows: readonly ThroughputRow[]): string[] {
  const ours = rows.filter((row) => row.role === 'ours' && !/cold/.test(row.label));
  if (ours.length === 0) return [];
  const best = ours.reduce((a, b) => (pagesPerSecond(b) > pagesPerSecond(a) ? b : a));
  const lines: string[] = [];
  const tesseract = rows.find((row) => row.role === 'tesseract');
  const ocrmypdf = rows.find((row) => row.role === 'ocrmypdf');
  if (tesseract) {
    const times = pagesPerSecond(tesseract) / pagesPerSecond(best);
    lines.push(
      `- Tesseract's text-only throughput is ${times.toFixed(2)}× ours (${best.label}); aim: at most 1.5× — ${times <= 1.5 ? 'met' : 'not met'}`,
    );
  }
  if (tesseract && best.cpuSeconds !== null && tesseract.cpuSeconds !== null) {
    // what the ratio would be on cores nothing else uses: throughput there is cores ÷ CPU per page
    const times = best.cpuSeconds / best.pages / (tesseract.cpuSeconds / tesseract.pages);
    lines.push(
      `- CPU per page: ours ${times.toFixed(2)}× Tesseract's (${best.label}): the throughput ratio where the cores are not shared`,
    );
  }
  if (ocrmypdf) {
    const times = pagesPerSecond(best) / pagesPerSecond(ocrmypdf);
    lines.push(
      `- ours is ${times.toFixed(2)}× OCRmyPDF's throughput (${best.label}); aim: at least 5× — ${times >= 5 ? 'met' : 'not met'}`,
    );
  }
  if (ocrmypdf && best.cpuSeconds !== null && ocrmypdf.cpuSeconds !== null) {
    const times = ocrmypdf.cpuSeconds / ocrmypdf.pages / (best.cpuSeconds / best.pages);
    lines.push(`- CPU per page: OCRmyPDF's ${times.toFixed(2)}× ours (${best.label}; img2pdf not counted)`);
  }
  return lines;
}
