// Search across an account's results over real HTTP (docs/search.md, issue 44 item 2), every
// answer checked against the OpenAPI document: real jobs run (the page pipeline answers with real
// ground-truth pages, one word given alternative readings as the beam search gives them; the real
// export pipeline writes the archive and the index), then a word is found exactly, with a typo
// (fuzzy), without its accents, as a phrase, through an alternative reading and through a person's
// correction; another account never finds it; the index is rebuilt from the stored page results;
// projections verify; an expired job's words are gone. The archive with alternatives is XSD-valid.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, test } from 'node:test';
import { createExportPipeline } from '../../src/pipeline/export-pipeline.ts';
import { verifyProjections } from '../../src/store/replay-projections.ts';
import { reindexSearch } from '../../src/use-cases/search.ts';
import { expireResults } from '../../src/workers/tasks/expire-results-worker.ts';
import { QUEUES } from '../../src/queue/queues.ts';
import { checkResultArchive } from '../support/check-result-archive.ts';
import { createTestDatabase } from '../support/database.ts';
import { groundTruthSearchPipeline, SEARCH_PAGES } from '../support/ground-truth-search-pages.ts';
import { type Auth, createCredentials, makeZip, startApiServer, waitForState } from '../support/http-client.ts';

const server = await startApiServer(await createTestDatabase(), {
  pipelines: { page: groundTruthSearchPipeline, export: createExportPipeline() },
});
after(() => server.close());
const { client, runtime } = server;
// every expiry here is one the test runs
await runtime.boss.offWork(QUEUES.expireResults);
const auth: Auth = { key: (await createCredentials(runtime, 'search-owner')).key };
const stranger: Auth = { key: (await createCredentials(runtime, 'search-stranger')).key };

async function runJob(key: Auth): Promise<string> {
  const zip = await makeZip([
    { name: 'p1/f207.jpg', data: await readFile(SEARCH_PAGES['f207.jpg'].imagePath) },
    { name: 'p2/dracula.png', data: await readFile(SEARCH_PAGES['dracula.png'].imagePath) },
  ]);
  const submitted = await client.submit(zip, key, { pipeline_steps: 'layout,recognition,export' });
  assert.equal(submitted.status, 202, JSON.stringify(submitted.body));
  const status = await waitForState(client, key, submitted.body.job_id, ['done'], 60_000);
  assert.equal(status.state, 'done', JSON.stringify(status));
  return submitted.body.job_id;
}

interface Hit {
  job_id: string;
  page: number;
  line_id: string;
  text: string;
  highlight: string;
  corrected: boolean;
  word: {
    text: string;
    box: { x: number; y: number; width: number; height: number };
    confidence: number;
    alternative: { text: string } | null;
  } | null;
  page_url: string;
}

async function search(query: string, key: Auth = auth): Promise<{ hits: Hit[]; next_cursor: string | null }> {
  const answer = await client.get(`/v1/search?${query}`, key);
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return answer.body;
}

const jobId = await runJob(auth);
const otherJob = await runJob(stranger);

test('a word is found exactly, with its line marked, its box, its confidence and the page link', async () => {
  const { hits } = await search('q=imperturbable');
  assert.equal(hits.length, 1);
  const [hit] = hits;
  assert.equal(hit.job_id, jobId);
  assert.equal(hit.page, 2);
  assert.match(hit.highlight, /<mark>imperturbable\.<\/mark>/);
  assert.equal(hit.word?.text, 'imperturbable.');
  assert.ok(hit.word && hit.word.box.width > 0 && hit.word.confidence === 0.9);
  assert.equal(hit.page_url, `/v1/process-scan/${jobId}/pages/2`);
  const page = await client.get(hit.page_url, auth);
  assert.equal(page.status, 200);
  assert.ok(page.body.lines.some((line: { id: string; text: string }) => line.id === hit.line_id && line.text === hit.text));
  // the job's filter, and a job of another account named: nothing
  assert.equal((await search(`q=imperturbable&job_id=${jobId}`)).hits.length, 1);
  assert.equal((await search(`q=imperturbable&job_id=${otherJob}`)).hits.length, 0);
});

test('with a typo: nothing exactly, found with fuzzy', async () => {
  assert.equal((await search('q=imperturbible')).hits.length, 0);
  const { hits } = await search('q=imperturbible&fuzzy=1');
  assert.ok(hits.length >= 1);
  assert.equal(hits[0].word?.text, 'imperturbable.');
  assert.match(hits[0].highlight, /<mark>imperturbable\.<\/mark>/);
});

test('without its accents, and as a phrase', async () => {
  const { hits } = await search(`q=${encodeURIComponent('remblaye apres')}`);
  assert.equal(hits.length, 1);
  assert.match(hits[0].text, /remblayé après/);
  assert.equal(hits[0].word?.text, 'remblayé');
  assert.equal((await search(`q=${encodeURIComponent('"apres avoir ete"')}`)).hits.length, 1);
  assert.equal((await search(`q=${encodeURIComponent('"avoir apres"')}`)).hits.length, 0);
  // the accents typed find it too
  assert.equal((await search(`q=${encodeURIComponent('REMBLAYÉ')}`)).hits.length, 1);
});

test('through an alternative reading of a word', async () => {
  const { hits } = await search('q=Hohnwood');
  assert.equal(hits.length, 1);
  assert.equal(hits[0].word?.text, 'Holmwood');
  assert.equal(hits[0].word?.alternative?.text, 'Hohnwood');
  // the reading itself ranks the line above a line found through an alternative
  assert.equal((await search('q=Holmwood')).hits[0].word?.alternative, null);
});

test("through a person's correction, and no longer by the machine's reading of that line", async () => {
  const found = (await search('q=vou')).hits;
  assert.equal(found.length, 1);
  const line = found[0];
  const saved = await client.request('PUT', `/v1/process-scan/${jobId}/pages/${line.page}/text`, {
    auth,
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ lines: [{ id: line.line_id, text: line.text.replace('vou', 'you Quincey') }] }),
  });
  assert.equal(saved.status, 200, JSON.stringify(saved.body));
  const { hits } = await search('q=quincey');
  assert.equal(hits.length, 1);
  assert.equal(hits[0].corrected, true);
  assert.equal(hits[0].line_id, line.line_id);
  assert.match(hits[0].highlight, /<mark>Quincey<\/mark>/);
  assert.equal((await search('q=vou')).hits.length, 0);
  assert.equal((await search('q=quincy&fuzzy=1')).hits[0]?.line_id, line.line_id);
});

test("another account's words are never found; pages of hits by cursor; bad requests refused", async () => {
  for (const query of ['q=imperturbable', 'q=Holmwood', 'q=remblaye', 'q=imperturbible&fuzzy=2', 'q=quincey']) {
    const { hits } = await search(query, stranger);
    assert.ok(
      hits.every((hit) => hit.job_id === otherJob),
      query,
    );
  }
  assert.equal((await search('q=quincey', stranger)).hits.length, 0, 'the correction is the owner’s');
  const first = await search('q=the&limit=2');
  assert.equal(first.hits.length, 2);
  assert.ok(first.next_cursor);
  const second = await search(`q=the&limit=2&cursor=${first.next_cursor}`);
  assert.ok(second.hits.length > 0);
  assert.ok(second.hits.every((hit) => !first.hits.some((seen) => seen.line_id === hit.line_id && seen.page === hit.page)));
  for (const query of ['', 'q=', 'q=a&fuzzy=3', 'q=a&limit=0', 'q=a&limit=101', 'q=a&job_id=x', 'q=a&cursor=zz', `q=${'a'.repeat(201)}`]) {
    const answer = await client.get(`/v1/search?${query}`, auth);
    assert.equal(answer.status, 400, query);
    assert.equal(answer.body.code, 'invalid_search_request');
  }
  assert.equal((await client.get('/v1/search?q=the', { key: 'hwr_nope' })).status, 401);
});

test('the archive with alternatives is XSD-valid; the index is rebuilt from the stored page results; projections verify', async () => {
  const archive = await client.get(`/v1/process-scan/${jobId}/result`, auth);
  assert.equal(archive.status, 200);
  await checkResultArchive(archive.raw);
  await runtime.db.pool.query('delete from search_lines where job_id = $1', [jobId]);
  assert.equal((await search('q=imperturbable')).hits.length, 0);
  const reindexed = await reindexSearch({ db: runtime.db, blobs: runtime.blobs, bus: runtime.bus });
  assert.deepEqual(
    reindexed.map((job) => job.jobId),
    [jobId],
  );
  assert.equal((await search('q=imperturbable')).hits.length, 1);
  assert.deepEqual((await verifyProjections(runtime.db.pool)).differences, []);
});

test("an expired job's words are gone", async () => {
  const status = (await client.get(`/v1/process-scan/${jobId}`, auth)).body;
  const expired = await expireResults(
    { bus: runtime.bus, blobs: runtime.blobs, log: runtime.log },
    new Date(Date.parse(status.expires_at) + 1000),
  );
  assert.ok(expired >= 1);
  for (const query of ['q=imperturbable', 'q=Hohnwood', 'q=quincey', 'q=remblaye&fuzzy=1'])
    assert.equal((await search(query)).hits.length, 0, query);
  const rows = await runtime.db.pool.query('select count(*)::int as n from search_lines where job_id = $1', [jobId]);
  assert.equal(rows.rows[0].n, 0);
  assert.deepEqual((await verifyProjections(runtime.db.pool)).differences, []);
});
