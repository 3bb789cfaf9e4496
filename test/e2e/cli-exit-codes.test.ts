// `hwr`'s exit codes tell a refusal from a service error (issue 42): a 4xx answer (the request is
// at fault: a bad key, a bad option or upload, an unknown job, a result not there) exits 5
// "refused"; a 5xx answer or a service that cannot be reached exits 4, as before. Real processes
// (bin/hwr.js) against a real server; the 5xx is the real one of a database gone (its proxy closed).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { freePort } from '../../src/db/embedded-postgres.ts';
import { createTestDatabase } from '../support/database.ts';
import { createCredentials, pagesZip, startApiServer } from '../support/http-client.ts';
import { startSilentProxy } from '../support/silent-proxy.ts';

const root = path.resolve(import.meta.dirname, '../..');
const work = await mkdtemp(path.join(os.tmpdir(), 'hwr-exit-codes-'));
const proxy = await startSilentProxy(await createTestDatabase());
const service = await startApiServer(proxy.url, {
  env: { DATABASE_STATEMENT_TIMEOUT_MS: '1000', DATABASE_QUERY_TIMEOUT_MS: '1500', DATABASE_CONNECT_TIMEOUT_MS: '1500' },
});
after(async () => {
  await proxy.close();
  await service.close();
  await rm(work, { recursive: true, force: true });
});
const { key } = await createCredentials(service.runtime, 'exit-codes');
const UNKNOWN_JOB = '00000000-0000-4000-8000-000000000000';

function hwr(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(root, 'bin/hwr.js'), ...args], {
      cwd: work,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, HWR_URL: service.baseUrl, HWR_API_KEY: key, ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('hwr exit codes', () => {
  test('a refusal (4xx) exits 5 and says it was refused: a wrong key, a bad upload, a bad option, an unknown job', async () => {
    const wrongKey = await hwr(['usage'], { HWR_API_KEY: 'hwr_wrong' });
    assert.equal(wrongKey.code, 5, wrongKey.stderr);
    assert.match(wrongKey.stderr, /^hwr usage: refused: 401 invalid_api_key: /m);

    const notAZip = path.join(work, 'not-a.zip');
    await writeFile(notAZip, 'this is not a ZIP archive');
    const badUpload = await hwr(['submit', notAZip]);
    assert.equal(badUpload.code, 5, badUpload.stderr);
    assert.match(badUpload.stderr, /refused: 400 invalid_zip: /);

    const zip = path.join(work, 'pages.zip');
    await writeFile(zip, await pagesZip(['1.jpg']));
    const badSteps = await hwr(['submit', zip, '--steps', 'recognition', '--wait']);
    assert.equal(badSteps.code, 5, badSteps.stderr);
    assert.match(badSteps.stderr, /refused: 400 invalid_pipeline_steps: /);

    for (const args of [
      ['status', UNKNOWN_JOB],
      ['status', UNKNOWN_JOB, '--wait'],
      ['result', UNKNOWN_JOB],
      ['cancel', UNKNOWN_JOB],
    ]) {
      const unknown = await hwr(args);
      assert.equal(unknown.code, 5, `${args.join(' ')}: ${unknown.stderr}`);
      assert.match(unknown.stderr, /refused: 404 job_not_found/, args.join(' '));
    }
  });

  test('a service that cannot be reached, or that answers 5xx (its database gone) after the retries, exits 4', async () => {
    const down = await hwr(['usage'], { HWR_URL: `http://127.0.0.1:${await freePort()}` });
    assert.equal(down.code, 4, down.stderr);
    assert.doesNotMatch(down.stderr, /refused:/);
    // The database goes away for good (the proxy closed: connections refused): every request is a
    // 503 database_unavailable, retried after its Retry-After, then given up. (Last test: the
    // service has no database from here on.)
    assert.equal((await hwr(['usage'])).code, 0);
    await proxy.close();
    const unavailable = await hwr(['usage']);
    assert.equal(unavailable.code, 4, unavailable.stderr);
    assert.match(unavailable.stderr, /^hwr usage: 503 database_unavailable: /m);
    assert.match(unavailable.stderr, /retrying in/);
    assert.doesNotMatch(unavailable.stderr, /refused:/);
  });
});
