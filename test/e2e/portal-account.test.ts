// Webhook secret (reveal and rotate after the password), usage (billed per month and day, not
// billed listed), and cancelling a job from its page, over real HTTP.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { accountStreamId, jobStreamId } from '../../domain/events.ts';
import { readStream } from '../../src/store/read-stream.ts';
import { createTestDatabase } from '../support/database.ts';
import { createCredentials, pagesZip, startApiServer, waitForState } from '../support/http-client.ts';
import { csrfTokenOf, portalUser, TEST_PASSWORD, type PortalClient, type PortalResponse } from '../support/portal-client.ts';
import { scriptedPipelines } from '../support/scripted-pipelines.ts';
import { waitUntil } from '../support/wait.ts';

const databaseUrl = await createTestDatabase();
// A page named hold-* stays in its first step until released: a job that is running when cancelled.
const server = await startApiServer(databaseUrl, { pipelines: scriptedPipelines() });
after(() => server.close());
const { runtime, baseUrl, client } = server;
const acme = await createCredentials(runtime, 'acme');
const auth = { key: acme.key };
const secretOf = (text: string) => /<p class="secret" id="webhook-secret">([^<]+)<\/p>/.exec(text)?.[1];
/** The page a form's POST leads to (Post/Redirect/Get: every form answers 303), as a browser shows it. */
const shown = async (c: PortalClient, response: PortalResponse): Promise<PortalResponse> => {
  assert.equal(response.status, 303, response.text);
  return c.get(response.headers.get('location')!);
};

describe('portal webhook secret, usage and cancel', () => {
  let user: PortalClient;

  test('the webhook secret is revealed only with the password; rotating replaces it (WebhookSecretRotated by the user)', async () => {
    user = await portalUser(runtime, baseUrl, 'acme', 'owner@example.org');
    const page = await user.get('/portal/settings/webhook');
    assert.equal(page.status, 200);
    assert.ok(!page.text.includes(acme.webhookSecret));
    const wrong = await shown(
      user,
      await user.post('/portal/settings/webhook/reveal', {
        _csrf: csrfTokenOf(page.text, '/portal/settings/webhook/reveal'),
        password: 'not the password',
      }),
    );
    assert.equal(wrong.status, 403);
    assert.ok(!wrong.text.includes(acme.webhookSecret));
    const revealed = await shown(
      user,
      await user.submit('/portal/settings/webhook', '/portal/settings/webhook/reveal', { password: TEST_PASSWORD }),
    );
    assert.equal(secretOf(revealed.text), acme.webhookSecret);
    assert.equal(
      (await shown(user, await user.submit('/portal/settings/webhook', '/portal/settings/webhook/rotate', { password: 'nope nope nope' })))
        .status,
      403,
    );
    const rotated = await shown(
      user,
      await user.submit('/portal/settings/webhook', '/portal/settings/webhook/rotate', { password: TEST_PASSWORD }),
    );
    const secret = secretOf(rotated.text);
    assert.match(secret ?? '', /^[0-9a-f]{64}$/);
    assert.notEqual(secret, acme.webhookSecret);
    const stored = await runtime.db.pool.query('select webhook_secret from account_secrets where account_id = $1', [acme.accountId]);
    assert.equal(stored.rows[0].webhook_secret, secret);
    const events = await readStream(runtime.db.pool, accountStreamId(acme.accountId));
    const rotation = events.find((event) => event.type === 'WebhookSecretRotated')!;
    assert.match(String(rotation.metadata.actor), /^user:/);
    // The two wrong passwords are sign-in failures of this user.
    assert.equal(events.filter((event) => event.type === 'UserSignInFailed').length, 2);
  });

  test('a running job is cancelled from its page (JobCancelled by the user); usage lists billed and not billed jobs', async () => {
    const done = await client.submit(await pagesZip(['1.jpg', '2.jpg']), auth);
    await waitForState(client, auth, done.body.job_id, ['done']);
    const running = await client.submit(await pagesZip(['hold-1.jpg', '2.jpg', '3.jpg', '4.jpg', '5.jpg', '6.jpg']), auth);
    const jobId = running.body.job_id;
    // Running: its held page has entered a step (and stays there), the job is processing.
    const heldPage = async () => {
      const events = await readStream(runtime.db.pool, jobStreamId(jobId));
      const queued = events.find((event) => event.type === 'JobQueued')!.data as { pages: Array<{ pageNumber: number; name: string }> };
      const page = queued.pages.find((source) => source.name === 'hold-1.jpg')!.pageNumber;
      return { page, types: events.filter((event) => (event.data as { page?: number | null }).page === page).map((event) => event.type) };
    };
    await waitUntil('the held page in a step', async () => (await heldPage()).types.includes('StepStarted'));
    assert.equal((await client.get(`/v1/process-scan/${jobId}`, auth)).body.state, 'processing');
    const cancelled = await user.submit(`/portal/jobs/${jobId}`, `/portal/jobs/${jobId}/cancel`, {});
    assert.equal(cancelled.status, 303);
    assert.equal((await client.get(`/v1/process-scan/${jobId}`, auth)).body.state, 'cancelled');
    assert.ok(!(await heldPage()).types.includes('PageCompleted'), 'the held page never completed');
    const events = await readStream(runtime.db.pool, jobStreamId(jobId));
    assert.match(String(events.find((event) => event.type === 'JobCancelled')!.metadata.actor), /^user:/);
    const jobPage = await user.get(`/portal/jobs/${jobId}`);
    assert.ok(!jobPage.text.includes(`action="/portal/jobs/${jobId}/cancel"`), 'no cancel button once cancelled');

    const usage = await user.get('/portal/usage');
    assert.equal(usage.status, 200);
    const month = new Date().toISOString().slice(0, 7);
    const day = new Date().toISOString().slice(0, 10);
    assert.ok(usage.text.includes(`<tr><td>${month}</td><td>1</td><td>2</td></tr>`), 'per month');
    assert.ok(usage.text.includes(`<tr><td>${day}</td><td>1</td><td>2</td></tr>`), 'per day');
    assert.ok(usage.text.includes('<tr><td>cancelled</td><td>1</td><td>6</td></tr>'), 'not billed');
    assert.match(usage.text, /No LLM correction yet/);
  });
});
