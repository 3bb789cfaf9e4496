// `npm run bench:export`: export time per page and peak memory for a 100-page job, and the
// PDF against ocrmypdf on the same images in the same run. Reads ../shared/fixtures/pages
// (the ten real pages, cycled to make 100); each export runs in its own child process so
// that its peak RSS is its own.
//   BENCH_PAGES=100            pages of the large job
//   BENCH_OCRMYPDF_PAGES=3     images given to ocrmypdf (one ocrmypdf run per image)
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { promisify } from 'node:util';
import { pino } from 'pino';
import { FilesystemBlobStore } from '../src/blobs/filesystem-blob-store.ts';
import { loadPdfAssets } from '../src/export/assets.ts';
import { prepareExportPage } from '../src/export/export-page.ts';
import { createExportPipeline } from '../src/pipeline/export-pipeline.ts';
import { SearchablePdfWriter } from '../src/export/pdf/searchable-pdf.ts';
import type { PdfFormat } from '../src/pipeline/pipeline.ts';
import { fixturePages, stageExportJob, type StagedPage } from '../test/support/export-job.ts';

const SHARED_PAGES = path.resolve(import.meta.dirname, '../../shared/fixtures/pages');
const PAGES = [
  ['hooker_JDH_2_16_144_002.jpg', 'hooker_JDH_2_16_144_002.xml'],
  ['hooker_JDH_2_3_6_79_001.jpg', 'hooker_JDH_2_3_6_79_001.xml'],
  ['stanford_SC0033B_s4_b01_f14_i083.jpg', 'stanford_SC0033B_s4_b01_f14_i083.xml'],
  ['stanford_Lettre57.jpg', 'stanford_Lettre57.xml'],
  ['stanford_Lettre42.jpg', 'stanford_Lettre42.xml'],
  ['cremma19_zola_f207.jpg', 'cremma19_zola_f207.xml'],
  ['copiste_imp_wikitexte_0022.jpg', 'copiste_imp_wikitexte_0022.xml'],
  ['peraire_test_B.12.japon3_0048.jpg', 'peraire_test_B.12.japon3_0048.xml'],
  ['fondue_en_print_dracula_page_51.png', 'fondue_en_print_dracula_page_51.xml'],
  ['ocrd_kant_aufklaerung_1784_0017.tif', 'ocrd_kant_aufklaerung_1784_0017.xml'],
].map(([image, xml]) => ({ image, xml }));

async function distinctPages(): Promise<StagedPage[]> {
  return fixturePages(SHARED_PAGES, PAGES);
}

function cycle(pages: StagedPage[], count: number): StagedPage[] {
  return Array.from({ length: count }, (_, index) => {
    const page = pages[index % pages.length];
    return { ...page, name: `scans/${String(index + 1).padStart(3, '0')}_${page.name.split('/').pop()}` };
  });
}

/** Child: stage `count` pages, export them, report time and memory as one JSON line. */
async function child(count: number, format: PdfFormat): Promise<void> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'hwr-bench-export-'));
  try {
    const blobs = new FilesystemBlobStore(root);
    const task = await stageExportJob(blobs, cycle(await distinctPages(), count), { pdfFormat: format });
    globalThis.gc?.();
    const before = process.memoryUsage();
    let peakRss = before.rss;
    let peakHeap = before.heapUsed;
    const sampler = setInterval(() => {
      const now = process.memoryUsage();
      peakRss = Math.max(peakRss, now.rss);
      peakHeap = Math.max(peakHeap, now.heapUsed);
    }, 20);
    const started = performance.now();
    const outcome = await createExportPipeline().exportJob(task, {
      blobs,
      signal: new AbortController().signal,
      log: pino({ level: 'silent' }),
    });
    const ms = performance.now() - started;
    clearInterval(sampler);
    console.log(
      JSON.stringify({
        count,
        format,
        ms,
        bytes: outcome.bytes,
        rssBeforeMB: before.rss / 2 ** 20,
        peakRssMB: peakRss / 2 ** 20,
        peakHeapMB: peakHeap / 2 ** 20,
      }),
    );
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

interface ChildReport {
  count: number;
  format: PdfFormat;
  ms: number;
  bytes: number;
  rssBeforeMB: number;
  peakRssMB: number;
  peakHeapMB: number;
}

function runChild(count: number, format: PdfFormat): Promise<ChildReport> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, ['--expose-gc', import.meta.filename, '--child', String(count), format], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    proc.stdout.on('data', (chunk) => (out += chunk));
    proc.on('exit', (code) =>
      code === 0 ? resolve(JSON.parse(out.trim().split('\n').at(-1)!)) : reject(new Error(`child exited ${code}`)),
    );
  });
}

async function ourPdf(pages: StagedPage[]): Promise<Array<{ name: string; ms: number; bytes: number; route: string }>> {
  const assets = await loadPdfAssets();
  const results = [];
  for (const page of pages) {
    const sink = new PassThrough();
    let bytes = 0;
    sink.on('data', (chunk: Buffer) => (bytes += chunk.length));
    const started = performance.now();
    const pdf = await SearchablePdfWriter.start(sink, {
      format: 'pdfa-2b',
      title: page.name,
      producer: 'hwr bench',
      created: new Date(0),
      documentKey: page.name,
      ...assets,
    });
    const report = await pdf.addPage(prepareExportPage(page.result), page.image);
    await pdf.finish();
    results.push({ name: page.name, ms: performance.now() - started, bytes, route: report.imageRoute });
  }
  return results;
}

async function ocrmypdf(
  image: string,
  dpi: number,
  ocr: boolean,
  output: string,
): Promise<{ ms: number; bytes: number } | { error: string }> {
  const args = ['-q', '--output-type', 'pdfa-2', '--image-dpi', String(dpi), '--jobs', '1', '-l', 'eng'];
  if (!ocr) args.push('--tesseract-timeout', '0');
  const started = performance.now();
  try {
    await promisify(execFile)('ocrmypdf', [...args, image, output], { maxBuffer: 64 * 1024 * 1024 });
  } catch (error) {
    return { error: ((error as { stderr?: string }).stderr ?? String(error)).trim().split('\n').at(-1)! };
  }
  return { ms: performance.now() - started, bytes: (await stat(output)).size };
}

const fmt = (value: number, digits = 0) => value.toFixed(digits);

if (process.argv[2] === '--child') {
  await child(Number(process.argv[3]), process.argv[4] as PdfFormat);
} else {
  if (!existsSync(SHARED_PAGES)) {
    console.error(`bench:export needs the shared fixtures at ${SHARED_PAGES}`);
    process.exit(2);
  }
  const large = Number(process.env.BENCH_PAGES ?? 100);
  console.log(`# export: ${os.cpus().length} CPUs, node ${process.version}`);
  console.log('job pages | pdf_format | total s | ms/page | archive MB | peak RSS MB (before) | peak heap MB');
  for (const [count, format] of [
    [10, 'pdfa-2b'],
    [large, 'pdfa-2b'],
    [large, 'none'],
  ] as const) {
    const r = await runChild(count, format);
    console.log(
      `${count} | ${format} | ${fmt(r.ms / 1000, 1)} | ${fmt(r.ms / count)} | ${fmt(r.bytes / 2 ** 20, 1)} | ${fmt(r.peakRssMB)} (${fmt(r.rssBeforeMB)}) | ${fmt(r.peakHeapMB)}`,
    );
  }

  const pages = await distinctPages();
  const ours = await ourPdf(pages);
  const ocrCount = Number(process.env.BENCH_OCRMYPDF_PAGES ?? 3);
  const work = await mkdtemp(path.join(os.tmpdir(), 'hwr-bench-ocrmypdf-'));
  console.log(`\n# PDF per page: ours (PDF/A-2b, text layer from the page result) vs ocrmypdf ${ocrCount} images, one process each`);
  console.log('image | ours route | ours ms | ours KB | ocrmypdf no-OCR ms | KB | ocrmypdf with OCR ms | KB');
  // Sums over the images both tools handled: ours vs ocrmypdf without OCR, and with OCR.
  const totals = { oursMs: 0, oursBytes: 0, plainMs: 0, plainBytes: 0, oursOcrMs: 0, ocrMs: 0 };
  try {
    for (const [index, page] of pages.entries()) {
      const mine = ours[index];
      let cells = ['-', '-', '-', '-'];
      if (index < ocrCount || PAGES[index].image.endsWith('.tif')) {
        const image = path.join(SHARED_PAGES, PAGES[index].image);
        const dpi = page.result.image.dpi ?? 300;
        const plain = await ocrmypdf(image, dpi, false, path.join(work, `${index}-plain.pdf`));
        const full = index < ocrCount ? await ocrmypdf(image, dpi, true, path.join(work, `${index}-ocr.pdf`)) : null;
        cells = [
          'error' in plain ? `failed: ${plain.error}` : fmt(plain.ms),
          'error' in plain ? '-' : fmt(plain.bytes / 1024),
          full === null ? '-' : 'error' in full ? `failed: ${full.error}` : fmt(full.ms),
          full === null || 'error' in full ? '-' : fmt(full.bytes / 1024),
        ];
        if (!('error' in plain)) {
          totals.oursMs += mine.ms;
          totals.oursBytes += mine.bytes;
          totals.plainMs += plain.ms;
          totals.plainBytes += plain.bytes;
        }
        if (full && !('error' in full)) {
          totals.oursOcrMs += mine.ms;
          totals.ocrMs += full.ms;
        }
      }
      console.log(`${PAGES[index].image} | ${mine.route} | ${fmt(mine.ms)} | ${fmt(mine.bytes / 1024)} | ${cells.join(' | ')}`);
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / Math.max(1, values.length);
  console.log(
    `\nours, all ${ours.length} images: ${fmt(mean(ours.map((page) => page.ms)))} ms/page, ${fmt(mean(ours.map((page) => page.bytes)) / 1024)} KB/page`,
  );
  console.log(`time, ocrmypdf without OCR / ours (same images, summed): ${fmt(totals.plainMs / totals.oursMs, 1)}x`);
  console.log(
    `time, ocrmypdf with OCR / ours (same images, summed; tesseract included, which ours does not need): ${fmt(totals.ocrMs / totals.oursOcrMs, 1)}x`,
  );
  console.log(`size, ours / ocrmypdf without OCR (same images, summed): ${fmt(totals.oursBytes / totals.plainBytes, 2)}x`);
}
