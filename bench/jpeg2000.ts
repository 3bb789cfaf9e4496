// JPEG 2000 decoding: the service's decoder (OpenJPEG compiled to WebAssembly, src/recognition/image/
// jpeg2000-decode.ts) against the peer, OpenJPEG's own native command-line decoder
// `opj_decompress` (Debian libopenjp2-tools), on the same files: the ten real pages of
// ../shared/fixtures/pages made into JP2 by `opj_compress`, lossless and lossy (rate 20), as an
// archive would keep them. The peer's time includes starting the process and writing a PNM to a
// temporary folder; ours includes a worker thread per page, as the service decodes each page in one.
// Needs opj_compress and opj_decompress on the PATH.
// Run: node bench/jpeg2000.ts [runs=3]
import { execFileSync } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { decodeJpeg2000 } from '../src/recognition/image/jpeg2000-decode.ts';
import { markdownTable } from './lib/table.ts';

const runs = Number(process.argv[2] ?? 3);
const pagesDir = path.resolve(import.meta.dirname, '../../shared/fixtures/pages');
const work = await mkdtemp(path.join(os.tmpdir(), 'hwr-bench-jpeg2000-'));

interface Variant {
  name: string;
  args: string[];
}
const VARIANTS: Variant[] = [
  { name: 'lossless', args: [] },
  { name: 'lossy, rate 20', args: ['-r', '20'] },
];

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

try {
  const pages = (await readdir(pagesDir)).filter((name) => /\.(jpg|png|tif)$/.test(name)).sort();
  const rows: string[][] = [];
  for (const variant of VARIANTS) {
    let megapixels = 0;
    let jp2Bytes = 0;
    let sourceBytes = 0;
    const ours: number[] = [];
    const peer: number[] = [];
    const files: string[] = [];
    for (const [index, page] of pages.entries()) {
      const source = path.join(pagesDir, page);
      const { data, info } = await sharp(source).removeAlpha().raw().toBuffer({ resolveWithObject: true });
      const pnm = path.join(work, `${index}.${info.channels === 1 ? 'pgm' : 'ppm'}`);
      const header = `${info.channels === 1 ? 'P5' : 'P6'}\n${info.width} ${info.height}\n255\n`;
      if (info.channels !== 1 && info.channels !== 3) throw new Error(`${page}: ${info.channels} channels`);
      await writeFile(pnm, Buffer.concat([Buffer.from(header), data]));
      const jp2 = path.join(work, `${index}-${variant.args.length ? 'lossy' : 'lossless'}.jp2`);
      execFileSync('opj_compress', ['-i', pnm, '-o', jp2, ...variant.args], { stdio: 'ignore' });
      files.push(jp2);
      megapixels += (info.width * info.height) / 1e6;
      jp2Bytes += (await stat(jp2)).size;
      sourceBytes += (await stat(source)).size;
    }
    for (let run = 0; run < runs; run += 1) {
      let started = performance.now();
      for (const file of files) await decodeJpeg2000(await readFile(file));
      ours.push(performance.now() - started);
      started = performance.now();
      for (const file of files) execFileSync('opj_decompress', ['-i', file, '-o', `${file}.pnm`], { stdio: 'ignore' });
      peer.push(performance.now() - started);
    }
    const oursMs = median(ours);
    const peerMs = median(peer);
    rows.push([
      variant.name,
      String(files.length),
      megapixels.toFixed(1),
      `${(jp2Bytes / 1e6).toFixed(1)} (${(sourceBytes / 1e6).toFixed(1)})`,
      (oursMs / megapixels).toFixed(0),
      (peerMs / megapixels).toFixed(0),
      `${(oursMs / peerMs).toFixed(2)}×`,
    ]);
  }
  console.log(`JPEG 2000 decoding, median of ${runs} runs over the ten fixture pages (${os.cpus().length} cores):\n`);
  console.log(
    markdownTable(
      ['JP2 made by opj_compress', 'pages', 'megapixels', 'MB (the pages as given)', 'ours ms/Mpx', 'opj_decompress ms/Mpx', 'ours / peer'],
      rows,
    ),
  );
} finally {
  await rm(work, { recursive: true, force: true });
}
