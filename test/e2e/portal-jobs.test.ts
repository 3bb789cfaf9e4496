// The portal's jobs over real HTTP: the account's jobs newest first with state, pages done of
// the page count and step; a job's page with its event timeline and the result download; a file
// name with markup escaped; another account's job not found; paging.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { createTestDatabase } from '../support/database.ts';
import { createCredentials, pagesZip, startApiServer, waitForState, waitForStatus } from '../support/http-client.ts';
import { portalUser, type PortalClient } from '../support/portal-client.ts';
import { scriptedPipelines } from '../support/scripted-pipelines.ts';

const databaseUrl = await createTestDatabase();
// A page named hold-* stays in its first step until released: a job seen while it runs.
const pipelines = scriptedPipelines();
const server = await startApiServer(databaseUrl, { pipelines });
after(() => server.close());
const { runtime, baseUrl, client } = server;
const acme = await createCredentials(runtime, 'acme');
const rival = await createCredentials(runtime, 'rival');
const auth = { key: acme.key };

describe('portal jobs', () => {
  let user: PortalClient;
  const jobIds: string[] = [];

  test('the jobs list shows the account’s jobs newest first with state, pages done of page count and step', async () => {
    user = await portalUser(runtime, baseUrl, 'acme', 'jobs@example.org');
    const empty = await user.get('/portal/jobs');
    assert.match(empty.text, /No jobs yet/);
    for (const pages of [['1.jpg'], ['1.jpg', '2.jpg']]) {
      const submitted = await client.submit(await pagesZip(pages), auth);
      assert.equal(submitted.status, 202);
      jobIds.push(submitted.body.job_id);
      await waitForState(client, auth, submitted.body.job_id, ['done']);
    }
    const list = await user.get('/portal/jobs');
    assert.equal(list.status, 200);
    const order = [...list.text.matchAll(/href="\/portal\/jobs\/([0-9a-f-]{36})"/g)].map((m) => m[1]);
    assert.deepEqual(order, [jobIds[1], jobIds[0]]);
    assert.match(list.text, /class="state-done">done<\/td>\s*<td>2 \/ 2<\/td>/);
    assert.match(list.text, /class="state-done">done<\/td>\s*<td>1 \/ 1<\/td>/);
    // Each job is told apart by its first page's name (the ids alone said nothing to a customer).
    // (The name isolated in <bdi>: its direction never reorders the text around it.)
    assert.match(list.text, new RegExp(`${jobIds[1]}</code></a><br><span class="muted"><bdi>1\\.jpg</bdi> and 1 more</span>`));
    assert.match(list.text, new RegExp(`${jobIds[0]}</code></a><br><span class="muted"><bdi>1\\.jpg</bdi></span>`));

    // A running job shows the step its page is in.
    const running = (await client.submit(await pagesZip(['hold-1.jpg']), auth)).body.job_id as string;
    await waitForStatus(client, auth, running, (body) => body.state === 'processing' && body.current_step === 'layout', 'held in layout');
    const during = await user.get('/portal/jobs');
    const rows = [...during.text.matchAll(/href="\/portal\/jobs\/([0-9a-f-]{36})"/g)].map((m) => m[1]);
    assert.deepEqual(rows, [running, jobIds[1], jobIds[0]]);
    assert.match(during.text, /class="state-processing">processing<\/td>\s*<td>0 \/ 1<\/td><td>layout<\/td>/);
    assert.match(during.text, /class="state-done">done<\/td>\s*<td>2 \/ 2<\/td><td>—<\/td>/, 'a finished job is in no step');
    pipelines.release(running);
    await waitForState(client, auth, running, ['done']);
  });

  test('a job page shows status, every event of the timeline, and the result downloads with the session', async () => {
    const jobPage = await user.get(`/portal/jobs/${jobIds[1]}`);
    assert.equal(jobPage.status, 200);
    const events = (await client.get(`/v1/process-scan/${jobIds[1]}/events`, auth)).body.events as Array<{ type: string }>;
    for (const type of new Set(events.map((event) => event.type))) assert.ok(jobPage.text.includes(`<td>${type}</td>`), type);
    assert.equal((jobPage.text.match(/<tr><td>\d+<\/td><td><time/g) ?? []).length, events.length);
    assert.match(jobPage.text, new RegExp(`href="/portal/jobs/${jobIds[1]}/result"`));
    const download = await fetch(`${baseUrl}/portal/jobs/${jobIds[1]}/result`, {
      headers: { Cookie: `hwr_session=${user.cookies.get('hwr_session')}` },
    });
    assert.equal(download.status, 200);
    assert.equal(download.headers.get('content-type'), 'application/zip');
    const bytes = Buffer.from(await download.arrayBuffer());
    const api = await client.get(`/v1/process-scan/${jobIds[1]}/result`, auth);
    assert.deepEqual(bytes, api.raw);
    // Signed out, the download is the sign-in page.
    assert.equal((await fetch(`${baseUrl}/portal/jobs/${jobIds[1]}/result`, { redirect: 'manual' })).status, 303);
  });

  test('a page file name with markup is escaped in the timeline', async () => {
    const submitted = await client.submit(await pagesZip(['<img src=x onerror=alert(1)>.jpg']), auth);
    assert.equal(submitted.status, 202);
    const page = await user.get(`/portal/jobs/${submitted.body.job_id}`);
    assert.ok(!page.text.includes('<img src=x'));
    assert.ok(page.text.includes('&#60;img src&#61;x onerror&#61;alert(1)&#62;.jpg'));
  });

  test("another account's job does not exist for this user, nor its download", async () => {
    const theirs = await client.submit(await pagesZip(['1.jpg']), { key: rival.key });
    await waitForState(client, { key: rival.key }, theirs.body.job_id, ['done']);
    assert.equal((await user.get(`/portal/jobs/${theirs.body.job_id}`)).status, 404);
    assert.equal((await user.get(`/portal/jobs/${theirs.body.job_id}/result`)).status, 404);
    assert.equal((await user.get('/portal/jobs/not-a-uuid')).status, 404);
    assert.ok(!(await user.get('/portal/jobs')).text.includes(theirs.body.job_id));
  });

  test('the list is paged 25 to a page', async () => {
    const zip = await pagesZip(['1.jpg']);
    for (let i = 0; i < 24; i++) assert.equal((await client.submit(zip, auth)).status, 202);
    const first = await user.get('/portal/jobs');
    assert.equal((first.text.match(/href="\/portal\/jobs\/[0-9a-f-]{36}"/g) ?? []).length, 25);
    assert.match(first.text, /href="\/portal\/jobs\?page=2">Older</);
    const second = await user.get('/portal/jobs?page=2');
    assert.ok((second.text.match(/href="\/portal\/jobs\/[0-9a-f-]{36}"/g) ?? []).length >= 2);
    assert.match(second.text, /href="\/portal\/jobs\?page=1">Newer</);
  });
});
