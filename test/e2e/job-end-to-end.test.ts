// The whole service for real: a ZIP of real scans submitted over HTTP, processed by the
// real pipelines (ONNX layout and recognition, export to PageXML, ALTO and PDF/A), the
// archive downloaded and every file in it checked with independent readers.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, test } from 'node:test';
import yazl from 'yazl';
import { createApiKey, createAccount } from '../../src/use-cases/accounts.ts';
import { defaultPipelines } from '../../src/pipeline/default-pipelines.ts';
import { startHttpServer } from '../../src/server/http-server.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { freePort } from '../../src/db/embedded-postgres.ts';
import { checkResultArchive } from '../support/check-result-archive.ts';
import { createTestDatabase } from '../support/database.ts';
import { startTestRuntime, testConfig } from '../support/engine.ts';

const FIXTURES = path.resolve(import.meta.dirname, '../fixtures');
const PAGES = [
  { entry: 'scans/1_dracula.png', file: 'export/fondue_en_print_dracula_page_51.png' },
  { entry: 'scans/2_zola.jpg', file: 'export/cremma19_zola_f207.jpg' },
  { entry: 'scans/10_kant.tif', file: 'export/ocrd_kant_aufklaerung_1784_0017.tif' },
  // An archive's master format: three handwritten lines as a lossless JP2 (fixtures/jpeg2000).
  { entry: 'scans/11_copiste.jp2', file: 'jpeg2000/copiste-lines-300dpi.jp2' },
];

const port = await freePort();
const config = await testConfig(await createTestDatabase(), {
  BASE_URL: `http://127.0.0.1:${port}`,
  WORKER_CONCURRENCY: '2',
  PAGE_RETRY_LIMIT: '0',
  // With no retry, a stall of a loaded machine past a short heartbeat would fail the job as a lost worker.
  TASK_HEARTBEAT_SECONDS: '60',
});
const runtime = await startTestRuntime(config, await defaultPipelines(config, createLogger('silent')));
const server = await startHttpServer(runtime, port, '127.0.0.1');
after(async () => {
  await server.close();
  await runtime.stop();
});

async function zipOf(pages: typeof PAGES): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  for (const page of pages) zip.addBuffer(await readFile(path.join(FIXTURES, page.file)), page.entry);
  zip.addBuffer(Buffer.from('junk'), '__MACOSX/._1_dracula.png');
  zip.end();
  const chunks: Buffer[] = [];
  for await (const chunk of zip.outputStream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

test('a ZIP of real scans becomes a valid result archive (PageXML, ALTO, PDF/A-2b, manifest)', async () => {
  const account = await createAccount(runtime.bus, 'e2e');
  const { key } = await createApiKey(runtime.bus, 'e2e', 'e2e test');
  const headers = { 'X-API-Key': key };

  const form = new FormData();
  form.append('scan_zip', new Blob([new Uint8Array(await zipOf(PAGES))], { type: 'application/zip' }), 'scans.zip');
  form.append('pdf_format', 'pdfa-2b');
  form.append('preset', 'historical');
  const submitted = await fetch(`${config.baseUrl}/v1/process-scan`, { method: 'POST', headers, body: form });
  assert.equal(submitted.status, 202);
  const job = (await submitted.json()) as { job_id: string; page_count: number; status_url: string; result_url: string };
  assert.equal(job.page_count, 4);

  let status: Record<string, unknown> = {};
  const deadline = Date.now() + 300_000;
  do {
    await new Promise((resolve) => setTimeout(resolve, 500));
    status = (await (await fetch(job.status_url, { headers })).json()) as Record<string, unknown>;
  } while (status.state !== 'done' && status.state !== 'failed' && Date.now() < deadline);
  assert.equal(status.state, 'done', `job ended ${status.state}: ${status.error_message}`);
  assert.equal(status.pages_done, 4);
  assert.equal(status.result_url, job.result_url);
  assert.match(String(status.warning_message), /no correction provider is configured/);

  const download = await fetch(job.result_url, { headers });
  assert.equal(download.status, 200);
  assert.equal(download.headers.get('content-type'), 'application/zip');
  assert.equal(download.headers.get('content-disposition'), `attachment; filename="${job.job_id}.zip"`);
  const archive = Buffer.from(await download.arrayBuffer());
  assert.equal(Number(download.headers.get('content-length')), archive.length);

  const checked = await checkResultArchive(archive);
  assert.equal(checked.manifest.job_id, job.job_id);
  assert.deepEqual(
    checked.pages.map((page) => page.pageNumber),
    [1, 2, 3, 4],
  );
  // Natural order of entry paths: 1_, 2_, 10_.
  const sources = checked.manifest.pages.map((page) => page.source.name);
  assert.deepEqual(
    sources,
    PAGES.map((page) => page.entry),
  );
  for (const [index, page] of checked.manifest.pages.entries()) {
    const bytes = await readFile(path.join(FIXTURES, PAGES[index].file));
    assert.equal(page.source.sha256, createHash('sha256').update(bytes).digest('hex'));
  }
  assert.ok([...checked.files.keys()].some((name) => name.endsWith('.pdf')));
  // The printed control page is read for real.
  const dracula = checked.pages[0].text;
  assert.match(dracula, /Holmwood/);
  // So is the handwritten JP2 page, decoded by OpenJPEG.
  assert.match(checked.pages[3].text, /pavillon de musique/);
  assert.ok(checked.pages.every((page) => page.pdfText !== null && page.text.length > 0));

  const events = (await (await fetch(`${job.status_url}/events`, { headers })).json()) as { events: Array<{ type: string }> };
  assert.equal(events.events.at(-1)?.type, 'JobSucceeded');
  assert.equal(account.name, 'e2e');
});
