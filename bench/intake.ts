// Intake throughput: a 20-page ZIP of real scanned pages (../shared/fixtures/pages, the ten
// page images twice) through intakeScanZip into a FilesystemBlobStore, against the peer
// tool `unzip` extracting the same archive to disk (CRC-checked, no image checks).
// Run: node bench/intake.ts [runs=5]
import { execFileSync } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import yazl from 'yazl';
import { FilesystemBlobStore } from '../src/blobs/filesystem-blob-store.ts';
import { loadConfig } from '../src/platform/config.ts';
import { intakeScanZip } from '../src/intake/scan-zip.ts';

const runs = Number(process.argv[2] ?? 5);
const pagesDir = path.resolve(import.meta.dirname, '../../shared/fixtures/pages');
const work = await mkdtemp(path.join(os.tmpdir(), 'hwr-bench-intake-'));

try {
  const images = (await readdir(pagesDir)).filter((name) => /\.(jpg|png|tif)$/.test(name)).sort();
  const zipPath = path.join(work, 'scan-20.zip');
  const contents = await Promise.all(images.map((name) => readFile(path.join(pagesDir, name))));
  await new Promise<void>((resolve, reject) => {
    const zip = new yazl.ZipFile();
    for (let copy = 0; copy < 2; copy += 1) {
      for (const [index, name] of images.entries()) {
        zip.addBuffer(contents[index], `scan/${copy * images.length + index + 1}${path.extname(name)}`);
      }
    }
    zip.end();
    zip.outputStream.pipe(createWriteStream(zipPath)).on('close', resolve).on('error', reject);
  });
  const zipBytes = (await stat(zipPath)).size;
  const limits = loadConfig({}).limits;

  const ours: number[] = [];
  const peer: number[] = [];
  let pageCount = 0;
  for (let run = 0; run < runs; run += 1) {
    const blobs = new FilesystemBlobStore(path.join(work, `blobs-${run}`));
    let started = performance.now();
    const pages = await intakeScanZip(zipPath, { limits, blobs, keyPrefix: 'jobs/bench/pages' });
    ours.push(performance.now() - started);
    pageCount = pages.length;

    const out = path.join(work, `unzip-${run}`);
    started = performance.now();
    execFileSync('unzip', ['-q', '-o', zipPath, '-d', out]);
    peer.push(performance.now() - started);
    await rm(path.join(work, `blobs-${run}`), { recursive: true, force: true });
    await rm(out, { recursive: true, force: true });
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
  console.log(`archive: ${pageCount} pages, ${(zipBytes / 1e6).toFixed(1)} MB, ${runs} runs (medians)`);
  console.log(`intakeScanZip (checks + sha256 + CRC + header read + store): ${median(ours).toFixed(0)} ms`);
  console.log(`unzip -q -d (extract only, peer):                           ${median(peer).toFixed(0)} ms`);
  console.log(`ratio intake/unzip: ${(median(ours) / median(peer)).toFixed(2)}`);
  console.log(
    `per page: ${(median(ours) / pageCount).toFixed(1)} ms; throughput ${(zipBytes / 1e6 / (median(ours) / 1000)).toFixed(0)} MB/s`,
  );
} finally {
  await rm(work, { recursive: true, force: true });
}
