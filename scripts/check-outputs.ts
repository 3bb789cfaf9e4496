// `npm run check:outputs [archive.zip ...]`: cross-checks result archives with independent
// Debian tools where they are installed (xmllint, qpdf, pdffonts, pdfinfo, pdftotext; verapdf
// if present). `pdftotext -raw` keeps content-stream order, which is our reading order.
// Without arguments it first exports the three fixture pages (test/fixtures/export) as a
// PDF/A-2b job and checks that archive.
// Exit status 1 when any check fails; tools that are missing are reported and skipped.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { pino } from 'pino';
import { FilesystemBlobStore } from '../src/blobs/filesystem-blob-store.ts';
import { createExportPipeline } from '../src/pipeline/export-pipeline.ts';
import type { Manifest } from '../src/export/manifest.ts';
import { readZip } from '../test/support/check-result-archive.ts';
import { fixturePages, stageExportJob } from '../test/support/export-job.ts';
import { descendantsNamed, parseXml } from '../test/support/xml-tree.ts';
import { SCHEMA_DIR } from '../test/support/xsd.ts';

const run = promisify(execFile);
let failures = 0;
const report = (ok: boolean | null, what: string, detail = ''): void => {
  if (ok === false) failures++;
  console.log(`${ok === null ? 'SKIP' : ok ? 'ok  ' : 'FAIL'} ${what}${detail ? ` — ${detail}` : ''}`);
};

async function tool(command: string, args: string[]): Promise<{ ok: boolean; out: string } | null> {
  try {
    const { stdout, stderr } = await run(command, args, { maxBuffer: 256 * 1024 * 1024 });
    return { ok: true, out: stdout + stderr };
  } catch (error) {
    const failure = error as NodeJS.ErrnoException & { stdout?: string; stderr?: string };
    if (failure.code === 'ENOENT') return null;
    return { ok: false, out: `${failure.stdout ?? ''}${failure.stderr ?? ''}` };
  }
}

const squash = (text: string) => text.replace(/\s+/gu, '');

async function checkArchive(zipPath: string, work: string): Promise<void> {
  console.log(`\n# ${zipPath}`);
  const { readFile } = await import('node:fs/promises');
  const files = await readZip(await readFile(zipPath));
  for (const [name, body] of files) {
    await mkdir(path.dirname(path.join(work, name)), { recursive: true });
    await writeFile(path.join(work, name), body);
  }
  const manifest = JSON.parse(files.get('manifest.json')!.toString('utf8')) as Manifest;

  for (const [kind, xsd] of [
    ['page', 'pagecontent-2019-07-15.xsd'],
    ['alto', 'alto-4-4.xsd'],
  ] as const) {
    const documents = manifest.pages.map((page) => path.join(work, page.files[kind]));
    const result = await tool('xmllint', ['--nonet', '--noout', '--schema', path.join(SCHEMA_DIR, xsd), ...documents]);
    report(
      result === null ? null : result.ok,
      `xmllint --schema ${xsd} (${documents.length} files)`,
      result?.ok === false ? result.out.slice(0, 2000) : '',
    );
  }
  if (!manifest.pdf) {
    report(null, 'PDF checks', 'pdf_format=none');
    return;
  }
  const pdf = path.join(work, manifest.pdf.path);
  const qpdf = await tool('qpdf', ['--check', pdf]);
  report(
    qpdf === null ? null : qpdf.ok && /No syntax or stream encoding errors/.test(qpdf.out),
    'qpdf --check',
    qpdf?.ok ? '' : qpdf?.out.slice(0, 1000),
  );

  const info = await tool('pdfinfo', [pdf]);
  if (info) {
    const pages = Number(/^Pages:\s+(\d+)/m.exec(info.out)?.[1]);
    const encrypted = /^Encrypted:\s+no/m.test(info.out);
    report(
      info.ok && pages === manifest.page_count && encrypted,
      'pdfinfo: page count, not encrypted',
      `pages ${pages}, ${/^PDF version:.*$/m.exec(info.out)?.[0]}`,
    );
  } else report(null, 'pdfinfo', 'not installed');

  const fonts = await tool('pdffonts', [pdf]);
  if (fonts) {
    const rows = fonts.out
      .split('\n')
      .slice(2)
      .filter((row) => row.trim() !== '');
    const allEmbedded = rows.every((row) => / yes\s+(yes|no)\s+yes\s+\d+\s+\d+\s*$/.test(row));
    report(
      fonts.ok && rows.length > 0 && allEmbedded,
      'pdffonts: every font embedded, with ToUnicode',
      rows.map((row) => row.replace(/\s+/g, ' ')).join('; '),
    );
  } else report(null, 'pdffonts', 'not installed');

  let textOk = true;
  let positioned = 0;
  let misplaced = 0;
  for (const page of manifest.pages) {
    const extracted = await tool('pdftotext', [
      '-raw',
      '-enc',
      'UTF-8',
      '-f',
      String(page.page_number),
      '-l',
      String(page.page_number),
      pdf,
      '-',
    ]);
    if (!extracted) {
      report(null, 'pdftotext', 'not installed');
      textOk = false;
      break;
    }
    const expected = files.get(page.files.text)!.toString('utf8');
    if (squash(extracted.out) !== squash(expected)) {
      textOk = false;
      report(
        false,
        `pdftotext -raw page ${page.page_number} equals text/ (modulo whitespace)`,
        `${squash(extracted.out).slice(0, 200)} ≠ ${squash(expected).slice(0, 200)}`,
      );
    }
    // Word boxes: every word pdftotext finds must lie on an ALTO String box with that text.
    const bbox = await tool('pdftotext', [
      '-bbox',
      '-enc',
      'UTF-8',
      '-f',
      String(page.page_number),
      '-l',
      String(page.page_number),
      pdf,
      '-',
    ]);
    const alto = parseXml(files.get(page.files.alto)!.toString('utf8'));
    const altoPage = descendantsNamed(alto, 'Page')[0];
    const pageWidthPt = Number(/<page width="([\d.]+)"/.exec(bbox?.out ?? '')?.[1]);
    const scale = pageWidthPt / Number(altoPage.attributes.WIDTH);
    const strings = descendantsNamed(alto, 'String').map((string) => string.attributes);
    for (const match of (bbox?.out ?? '').matchAll(
      /<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">([^<]*)<\/word>/g,
    )) {
      const [xMin, yMin, xMax, yMax] = match.slice(1, 5).map(Number);
      const text = decodeEntities(match[5]);
      const cx = (xMin + xMax) / 2 / scale;
      const cy = (yMin + yMax) / 2 / scale;
      positioned++;
      const hit = strings.some(
        (string) =>
          string.CONTENT.includes(text) &&
          cx >= Number(string.HPOS) - 2 &&
          cx <= Number(string.HPOS) + Number(string.WIDTH) + 2 &&
          cy >= Number(string.VPOS) - Number(string.HEIGHT) * 0.5 &&
          cy <= Number(string.VPOS) + Number(string.HEIGHT) * 1.5,
      );
      if (!hit) misplaced++;
    }
  }
  if (textOk) report(true, `pdftotext -raw: text of all ${manifest.page_count} pages equals text/ files (modulo whitespace)`);
  report(misplaced === 0, 'pdftotext -bbox: words lie on their ALTO String boxes', `${positioned - misplaced}/${positioned} words`);

  const verapdf = await tool('verapdf', ['--flavour', '2b', '--format', 'text', pdf]);
  if (verapdf === null) report(null, 'verapdf (PDF/A-2b validation)', 'not installed (not packaged in Debian)');
  else report(verapdf.ok && /^PASS/m.test(verapdf.out), 'verapdf --flavour 2b', verapdf.out.slice(0, 500));
}

function decodeEntities(text: string): string {
  return text.replace(/&(amp|lt|gt|quot|apos);/g, (_, name: string) => ({ amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" })[name]!);
}

const work = await mkdtemp(path.join(os.tmpdir(), 'hwr-check-outputs-'));
try {
  const archives = process.argv.slice(2);
  if (archives.length === 0) {
    const blobs = new FilesystemBlobStore(path.join(work, 'blobs'));
    const task = await stageExportJob(blobs, await fixturePages());
    await createExportPipeline().exportJob(task, { blobs, signal: new AbortController().signal, log: pino({ level: 'silent' }) });
    archives.push(blobs.localPath(task.archiveKey));
  }
  for (const [index, archive] of archives.entries()) await checkArchive(archive, path.join(work, `archive-${index}`));
} finally {
  await rm(work, { recursive: true, force: true });
}
console.log(failures === 0 ? '\nall checks passed' : `\n${failures} check(s) failed`);
process.exit(failures === 0 ? 0 : 1);
