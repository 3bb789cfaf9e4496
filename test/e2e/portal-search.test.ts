// Search in the portal over real HTTP (docs/search.md, "Portal"): real jobs run (the page pipeline
// answers with real ground-truth pages, support/ground-truth-search-pages.ts; the real export
// pipeline writes the archive and the index); the header's search box on every page; a word found
// with its line marked (escaped), the job and page, and a thumbnail cut from the page image around
// the line (cached, 304 on its ETag, the account's only); fuzzy; pages of results by cursor; the
// viewer opened at the hit's line with it selected and the matched words marked on the image and
// in the text; another account's words never found. Last, the done job's page offers its signed
// IIIF manifest URL (docs/iiif.md, "From the portal"), signed with the submitting key, then with
// another when that one is revoked.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, test } from 'node:test';
import sharp from 'sharp';
import { createExportPipeline } from '../../src/pipeline/export-pipeline.ts';
import { createApiKey, revokeApiKey } from '../../src/use-cases/accounts.ts';
import { createTestDatabase } from '../support/database.ts';
import { groundTruthSearchPipeline, SEARCH_PAGES } from '../support/ground-truth-search-pages.ts';
import { type Auth, createCredentials, makeZip, startApiServer, waitForState } from '../support/http-client.ts';
import { type PortalClient, portalUser } from '../support/portal-client.ts';

const server = await startApiServer(await createTestDatabase(), {
  pipelines: { page: groundTruthSearchPipeline, export: createExportPipeline() },
});
after(() => server.close());
const { client, runtime, baseUrl } = server;
const ownerCredentials = await createCredentials(runtime, 'searchers');
const owner: Auth = { key: ownerCredentials.key };
const stranger: Auth = { key: (await createCredentials(runtime, 'strangers')).key };

async function runJob(auth: Auth): Promise<string> {
  const zip = await makeZip([
    { name: 'p1/f207.jpg', data: await readFile(SEARCH_PAGES['f207.jpg'].imagePath) },
    { name: 'p2/dracula.png', data: await readFile(SEARCH_PAGES['dracula.png'].imagePath) },
  ]);
  const submitted = await client.submit(zip, auth, { pipeline_steps: 'layout,recognition,export' });
  assert.equal(submitted.status, 202, JSON.stringify(submitted.body));
  const status = await waitForState(client, auth, submitted.body.job_id, ['done'], 60_000);
  assert.equal(status.state, 'done', JSON.stringify(status));
  return submitted.body.job_id;
}

const jobs = [await runJob(owner), await runJob(owner)];
const otherJob = await runJob(stranger);
const user = await portalUser(runtime, baseUrl, 'searchers', 'reader@example.org');
const rival = await portalUser(runtime, baseUrl, 'strangers', 'rival@example.org');

/** A portal page, its `=` and `&` (which the portal escapes in attributes) read back, as a browser reads a link. */
async function view(client: PortalClient, path: string): Promise<{ status: number; text: string }> {
  const page = await client.get(path);
  return { status: page.status, text: page.text.replace(/&#61;/g, '=').replace(/&#38;/g, '&') };
}

/** The hits of a results page: each one's link, thumbnail, snippet and the line under it. */
function hitsOf(page: string): { href: string; thumbnail: string; snippet: string; about: string }[] {
  return [
    ...page.matchAll(
      /<li><a class="hit" href="([^"]+)"><img src="([^"]+)"[^>]*><span class="snippet">(.*?)<\/span><\/a>\s*<span class="muted">(.*?)<\/span><\/li>/gs,
    ),
  ].map((match) => ({ href: match[1], thumbnail: match[2], snippet: match[3], about: match[4] }));
}

test('every signed-in page has a search box; the search page without words shows its form', async () => {
  const jobsPage = await view(user, '/portal/jobs');
  assert.match(
    jobsPage.text,
    /<form class="search-box" role="search" method="get" action="\/portal\/search"><input type="search" name="q" aria-label="Search your pages"/,
  );
  const empty = await view(user, '/portal/search');
  assert.equal(empty.status, 200);
  assert.match(empty.text, /<form class="search-form" role="search"/);
  assert.doesNotMatch(empty.text, /class="search-box"/, 'the search page has its own form, not the header box too');
  const signedOut = await fetch(`${baseUrl}/portal/search?q=remblaye`, { redirect: 'manual' });
  assert.equal(signedOut.status, 303);
  assert.equal(signedOut.headers.get('location'), `/portal/sign-in?next=${encodeURIComponent('/portal/search?q=remblaye')}`);
});

test('a word is found without its accents: its line marked, the job and page, a link to the viewer and a thumbnail', async () => {
  const page = await view(user, '/portal/search?q=remblaye');
  assert.equal(page.status, 200);
  const hits = hitsOf(page.text);
  assert.equal(hits.length, 2, 'one line in each of the two jobs');
  const [hit] = hits;
  assert.match(hit.snippet, /Bonnemort a <mark class="hit">remblayé<\/mark> après/);
  assert.match(
    hit.about,
    new RegExp(`Job <code>(${jobs.map((job) => job.slice(0, 8)).join('|')})</code> · page 1 \\(<bdi>p1/f207.jpg</bdi>\\)`),
  );
  const viewer = new URL(hit.href, baseUrl);
  const [, jobId, pageNumber] = /^\/portal\/jobs\/([0-9a-f-]+)\/pages\/(\d+)$/.exec(viewer.pathname)!;
  assert.ok(jobs.includes(jobId));
  assert.equal(pageNumber, '1');
  const lineId = viewer.searchParams.get('line')!;
  assert.equal(viewer.searchParams.get('q'), 'remblaye');
  assert.equal(viewer.hash, `#text-${lineId}`);
  assert.equal(hit.thumbnail, `/portal/jobs/${jobId}/pages/1/lines/${lineId}/image`);
  // The line as the API finds it: the same use case.
  const api = await client.get(`/v1/search?q=remblaye&job_id=${jobId}`, owner);
  assert.equal(api.body.hits[0].line_id, lineId);
});

test("the thumbnail is the line's region of the page image: small, cacheable, 304 to its ETag, the account's only", async () => {
  const [hit] = hitsOf((await view(user, '/portal/search?q=imperturbable')).text);
  const cookie = `hwr_session=${user.cookies.get('hwr_session')}`;
  const response = await fetch(`${baseUrl}${hit.thumbnail}`, { headers: { Cookie: cookie } });
  assert.equal(response.status, 200);
  assert.equal(response.headers.get('content-type'), 'image/jpeg');
  assert.match(response.headers.get('cache-control') ?? '', /^private, max-age=\d+$/);
  const image = await sharp(Buffer.from(await response.arrayBuffer())).metadata();
  // A line of the 2550 × 3300 page: much wider than high, at most 720 × 120.
  assert.ok(image.width! <= 720 && image.height! <= 120 && image.width! > 4 * image.height!, `${image.width} × ${image.height}`);
  const again = await fetch(`${baseUrl}${hit.thumbnail}`, { headers: { Cookie: cookie, 'If-None-Match': response.headers.get('etag')! } });
  assert.equal(again.status, 304);
  const rivalCookie = `hwr_session=${rival.cookies.get('hwr_session')}`;
  assert.equal((await fetch(`${baseUrl}${hit.thumbnail}`, { headers: { Cookie: rivalCookie } })).status, 404, "another account's job");
  const unknownLine = hit.thumbnail.replace(/\/lines\/[^/]+\//, '/lines/no_such_line/');
  assert.equal((await fetch(`${baseUrl}${unknownLine}`, { headers: { Cookie: cookie } })).status, 404);
  assert.equal((await fetch(`${baseUrl}${hit.thumbnail}`, { redirect: 'manual' })).status, 303, 'signed out: to the sign-in page');
});

test('a click opens the viewer at the line: selected on both sides, the matched words marked on the image and in the text', async () => {
  const [hit] = hitsOf((await view(user, '/portal/search?q=imperturbable')).text);
  const viewer = new URL(hit.href, baseUrl);
  const lineId = viewer.searchParams.get('line')!;
  const page = await view(user, `${viewer.pathname}${viewer.search}`);
  assert.equal(page.status, 200);
  assert.match(page.text, new RegExp(`<polygon class="line selected" id="line-${lineId}"`));
  assert.match(page.text, new RegExp(`<li id="text-${lineId}" data-line="${lineId}" data-text="[^"]*" class="selected">`));
  assert.match(page.text, /<mark class="hit">imperturbable\.<\/mark>/);
  assert.equal((page.text.match(/<rect class="hit-word" x="\d+" y="\d+" width="[1-9]\d*" height="[1-9]\d*"><\/rect>/g) ?? []).length, 1);
  assert.match(page.text, /Words matching <q>imperturbable<\/q> are <mark class="hit">marked<\/mark>.*\(1 on this page\)/);
  assert.match(page.text, /href="\/portal\/search\?q=imperturbable">Back to the results<\/a>/);
  // Opened without a search: nothing selected, nothing marked.
  const plain = await view(user, viewer.pathname);
  assert.doesNotMatch(plain.text, /class="line selected"|hit-word|mark class="hit"/);
});

test('with a typo: nothing as written, found with close spellings', async () => {
  const exact = await view(user, '/portal/search?q=imperturbible');
  assert.equal(hitsOf(exact.text).length, 0);
  assert.match(exact.text, /No line found\. Try close spellings\./);
  const fuzzy = await view(user, '/portal/search?q=imperturbible&fuzzy=1');
  const hits = hitsOf(fuzzy.text);
  assert.equal(hits.length, 2);
  assert.match(hits[0].snippet, /<mark class="hit">imperturbable\.<\/mark>/);
  assert.equal(new URL(hits[0].href, baseUrl).searchParams.get('fuzzy'), '1');
  assert.match(fuzzy.text, /<option value="1" selected>/);
  const viewer = await view(user, hits[0].href.replace(/#.*$/, ''));
  assert.match(viewer.text, /<mark class="hit">imperturbable\.<\/mark>/, 'the viewer marks the word the fuzzy search found');
});

test('results come a page at a time, by cursor', async () => {
  // "to": 12 lines of the Dracula page, in each of the two jobs.
  const first = await view(user, '/portal/search?q=to');
  const firstHits = hitsOf(first.text);
  assert.equal(firstHits.length, 20);
  const more = /<a href="(\/portal\/search\?q=to&cursor=[^"]+)">More results<\/a>/.exec(first.text);
  assert.ok(more, 'a link to the next results');
  const second = await view(user, more[1]);
  const secondHits = hitsOf(second.text);
  assert.equal(secondHits.length, 4);
  assert.ok(secondHits.every((hit) => !firstHits.some((seen) => seen.href === hit.href)));
  assert.doesNotMatch(second.text, />More results</);
  assert.match(second.text, /<a href="\/portal\/search\?q=to">First results<\/a>/);
});

test("another account's words are never found; what the user typed is text; a bad search is refused on the form", async () => {
  const rivalHits = hitsOf((await view(rival, '/portal/search?q=remblaye')).text);
  assert.equal(rivalHits.length, 1);
  assert.ok(rivalHits[0].href.startsWith(`/portal/jobs/${otherJob}/`));
  for (const jobId of jobs) assert.equal((await view(rival, `/portal/jobs/${jobId}/pages/1?line=x&q=remblaye`)).status, 404);
  const typed = await view(user, `/portal/search?q=${encodeURIComponent('<script>alert(1)</script> "a')}`);
  assert.equal(typed.status, 200);
  assert.ok(!typed.text.includes('<script>alert'));
  assert.ok(typed.text.includes('&#60;script&#62;alert(1)&#60;/script&#62;'));
  const bad = await view(user, '/portal/search?q=remblaye&fuzzy=7');
  assert.equal(bad.status, 400);
  assert.match(bad.text, /This search cannot be made: fuzzy must be 0, 1 or 2\./);
  assert.match(bad.text, /<form class="search-form"/);
  assert.equal((await view(user, `/portal/search?q=${'a'.repeat(201)}`)).status, 400);
});

test("a person's correction is found and marked in the results and the viewer", async () => {
  const [found] = (await client.get(`/v1/search?q=vou&job_id=${jobs[0]}`, owner)).body.hits;
  const saved = await client.request('PUT', `/v1/process-scan/${jobs[0]}/pages/${found.page}/text`, {
    auth: owner,
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ lines: [{ id: found.line_id, text: found.text.replace('vou', 'you Quincey & "Art"') }] }),
  });
  assert.equal(saved.status, 200, JSON.stringify(saved.body));
  const hits = hitsOf((await view(user, '/portal/search?q=quincey')).text);
  assert.equal(hits.length, 1);
  assert.match(hits[0].snippet, /you <mark class="hit">Quincey<\/mark> & &#34;Art&#34;/);
  assert.match(hits[0].about, / · corrected/);
  const viewer = await view(user, hits[0].href.replace(/#.*$/, ''));
  assert.match(viewer.text, /<a class="line-text" href="#line-[^"]+">[^<]*<mark class="hit">Quincey<\/mark> & &#34;Art&#34;/);
});

// Last: it revokes the key the jobs were submitted with.
test('the job page offers the signed IIIF manifest: it opens without a key; signed with the submitting key, then another when it is revoked; with none, the page says to create one', async () => {
  const manifestOf = async () => {
    const page = await view(user, `/portal/jobs/${jobs[0]}`);
    assert.equal(page.status, 200);
    const link = /<a href="([^"]+)" target="_blank" rel="noopener noreferrer" data-iiif-manifest>Open the manifest<\/a>/.exec(page.text);
    return { page: page.text, url: link?.[1] ?? null };
  };
  const first = await manifestOf();
  assert.ok(first.url, 'a manifest link');
  assert.match(
    first.url,
    new RegExp(`^${baseUrl}/v1/process-scan/${jobs[0]}/iiif/${ownerCredentials.keyId}\\.\\d+\\.[\\w-]{43}/manifest$`),
  );
  assert.ok(first.page.includes(`<p class="secret" id="iiif-manifest-url">${first.url}</p>`));
  assert.match(first.page, /data-copy="iiif-manifest-url"/);
  assert.match(first.page, /Signed with the API key <q>test key<\/q>/);
  // A viewer's plain GET: no key, no cookie.
  const manifest = await fetch(first.url);
  assert.equal(manifest.status, 200);
  const body = (await manifest.json()) as { id: string; type: string; items: unknown[] };
  assert.equal(body.type, 'Manifest');
  assert.equal(body.id, first.url);
  assert.equal(body.items.length, 2);

  const spare = await createApiKey(runtime.bus, 'searchers', 'publishing', 'test');
  assert.ok((await manifestOf()).url?.includes(`/iiif/${ownerCredentials.keyId}.`), 'the submitting key while it is active');
  await revokeApiKey(runtime.bus, ownerCredentials.keyId, 'test');
  assert.equal((await fetch(first.url)).status, 401, 'revoking the key ends its URL');
  const second = await manifestOf();
  assert.ok(second.url?.includes(`/iiif/${spare.keyId}.`), String(second.url));
  assert.match(second.page, /Signed with the API key <q>publishing<\/q>/);
  assert.equal((await fetch(second.url!)).status, 200);
  await revokeApiKey(runtime.bus, spare.keyId, 'test');
  const none = await manifestOf();
  assert.equal(none.url, null);
  assert.match(none.page, /it has none that is active: <a href="\/portal\/settings\/keys">create one<\/a>/);
});
