// Jobs → New job over real HTTP: a multipart upload through the API's own submission route,
// with the session as the caller; the same validation and messages as the API; CSRF required.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { jobStreamId } from '../../domain/events.ts';
import { readStream } from '../../src/store/read-stream.ts';
import { createTestDatabase } from '../support/database.ts';
import { createCredentials, pagesZip, scanForm, startApiServer, waitForState } from '../support/http-client.ts';
import { csrfTokenOf, portalUser, type PortalClient } from '../support/portal-client.ts';
import { testExportPipeline, testPagePipeline } from '../support/test-pipelines.ts';

const databaseUrl = await createTestDatabase();
const server = await startApiServer(databaseUrl, { pipelines: { page: testPagePipeline({ worker: 'w1' }), export: testExportPipeline() } });
after(() => server.close());
const { runtime, baseUrl, client } = server;
const acme = await createCredentials(runtime, 'acme');

async function upload(user: PortalClient, body: FormData, csrf: string | null): Promise<Response> {
  const query = csrf === null ? '' : `?_csrf=${encodeURIComponent(csrf)}`;
  return fetch(`${baseUrl}/portal/jobs/new${query}`, {
    method: 'POST',
    body,
    redirect: 'manual',
    headers: { Cookie: `hwr_session=${user.cookies.get('hwr_session')}` },
  });
}
const messageOf = (text: string) => /<p class="notice error"[^>]*>([^<]*)</.exec(text)?.[1];

describe('portal new job', () => {
  let user: PortalClient;
  let csrf = '';

  test('a ZIP uploaded with options becomes a job of the account, submitted by the user', async () => {
    user = await portalUser(runtime, baseUrl, 'acme', 'uploader@example.org');
    const page = await user.get('/portal/jobs/new');
    assert.equal(page.status, 200);
    csrf = /action="\/portal\/jobs\/new\?_csrf=([^"]+)"/.exec(page.text)![1];
    assert.equal(csrf, csrfTokenOf(page.text.replace(/action="\/portal\/jobs\/new\?_csrf=[^"]+"/, 'action="/x"'), '/portal/sign-out'));
    const response = await upload(
      user,
      scanForm(await pagesZip(['1.jpg', '2.jpg']), { llm_tier: 'cheap', preset: 'letter', pdf_format: 'none' }),
      csrf,
    );
    assert.equal(response.status, 303);
    const jobId = /^\/portal\/jobs\/([0-9a-f-]{36})$/.exec(response.headers.get('location') ?? '')![1];
    const status = await waitForState(client, { key: acme.key }, jobId, ['done']);
    assert.equal(status.page_count, 2);
    const [queued] = await readStream(runtime.db.pool, jobStreamId(jobId));
    assert.equal(queued.type, 'JobQueued');
    assert.match(String(queued.metadata.actor), /^user:[0-9a-f-]{36}$/);
    const data = queued.data as { keyId: string | null; options: { llmTier: string; preset: string; pdfFormat: string } };
    assert.equal(data.keyId, null);
    assert.deepEqual([data.options.llmTier, data.options.preset, data.options.pdfFormat], ['cheap', 'letter', 'none']);
    assert.ok((await user.get('/portal/jobs')).text.includes(jobId));
  });

  test('the API’s validation and messages, on the form', async () => {
    const zip = await pagesZip(['1.jpg']);
    for (const [fields, fileZip] of [
      [{ preset: 'poetry' }, zip],
      [{ pipeline_steps: 'recognition' }, zip],
      [{}, Buffer.from('not a zip')],
    ] as const) {
      const viaApi = await client.submit(fileZip, { key: acme.key }, fields);
      // Post/Redirect/Get: the refusal is shown by the form the POST redirects to.
      const posted = await upload(user, scanForm(fileZip, fields), csrf);
      assert.equal(posted.status, 303, JSON.stringify(fields));
      const viaPortal = await fetch(`${baseUrl}${posted.headers.get('location')}`, {
        headers: { Cookie: `hwr_session=${user.cookies.get('hwr_session')}` },
      });
      assert.equal(viaPortal.status, viaApi.status, JSON.stringify(fields));
      const text = await viaPortal.text();
      assert.match(viaPortal.headers.get('content-type') ?? '', /^text\/html/);
      assert.equal(
        messageOf(text),
        viaApi.body.detail
          .replace(/&/g, '&#38;')
          .replace(/"/g, '&#34;')
          .replace(/'/g, '&#39;')
          .replace(/</g, '&#60;')
          .replace(/>/g, '&#62;')
          .replace(/=/g, '&#61;'),
      );
    }
  });

  test("past the request rate, a user's uploads are refused unread with Retry-After, as an API key's are", async () => {
    // One upload at once, then one every 100 s: the second upload, moments after the first, finds
    // no token back by the clock however loaded the machine.
    const ratePerSecond = 0.01;
    const rated = await startApiServer(databaseUrl, { env: { RATE_LIMIT_PER_SECOND: String(ratePerSecond), RATE_LIMIT_BURST: '1' } });
    try {
      await createCredentials(rated.runtime, 'rated');
      const owner = await portalUser(rated.runtime, rated.baseUrl, 'rated', 'owner@rated.example');
      const token = /action="\/portal\/jobs\/new\?_csrf=([^"]+)"/.exec((await owner.get('/portal/jobs/new')).text)![1];
      const send = () =>
        fetch(`${rated.baseUrl}/portal/jobs/new?_csrf=${encodeURIComponent(token)}`, {
          method: 'POST',
          body: scanForm(zip),
          redirect: 'manual',
          headers: { Cookie: `hwr_session=${owner.cookies.get('hwr_session')}` },
        });
      const zip = await pagesZip(['1.jpg']);
      assert.equal((await send()).status, 303);
      const answer = await send();
      assert.equal(answer.status, 303, 'Post/Redirect/Get: the form shows the refusal after the redirect');
      const refused = await fetch(`${rated.baseUrl}${answer.headers.get('location')}`, {
        headers: { Cookie: `hwr_session=${owner.cookies.get('hwr_session')}` },
      });
      assert.equal(refused.status, 429);
      // The wait for the next token, in whole seconds: at least 1, at most one token's time.
      const retryAfter = Number(refused.headers.get('retry-after'));
      assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 1 / ratePerSecond, `Retry-After: ${retryAfter}`);
      assert.match(messageOf(await refused.text()) ?? '', /^You sent more than 1 requests at once or 0\.01 a second/);
      const jobs = await rated.runtime.db.pool.query(
        `select count(*)::int as n from job_status where account_id = (select account_id from accounts where name = 'rated')`,
      );
      assert.equal(jobs.rows[0].n, 1, 'the refused upload made no job');
    } finally {
      await rated.close();
    }
  });

  test('without the CSRF token, or signed out, nothing is submitted', async () => {
    const before = (await runtime.db.pool.query('select count(*)::int as n from job_status')).rows[0].n;
    assert.equal((await upload(user, scanForm(await pagesZip(['1.jpg'])), null)).status, 403);
    assert.equal((await upload(user, scanForm(await pagesZip(['1.jpg'])), 'forged')).status, 403);
    const signedOut = await fetch(`${baseUrl}/portal/jobs/new?_csrf=${csrf}`, {
      method: 'POST',
      body: scanForm(await pagesZip(['1.jpg'])),
      redirect: 'manual',
    });
    assert.equal(signedOut.status, 403);
    assert.equal((await runtime.db.pool.query('select count(*)::int as n from job_status')).rows[0].n, before);
  });
});
