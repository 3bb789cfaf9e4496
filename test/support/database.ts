// A fresh, migrated database per test file, on the embedded PostgreSQL that
// `npm test` starts (HWR_TEST_DATABASE_URL), or on one started here when a test
// file is run alone with `node --test FILE`.
import { randomBytes } from 'node:crypto';
import { after } from 'node:test';
import pg from 'pg';
import { startEmbeddedPostgres, freePort, defaultTempClusterDir } from '../../src/db/embedded-postgres.ts';
import { rm } from 'node:fs/promises';

let serverUrl: Promise<string> | null = null;

function testServerUrl(): Promise<string> {
  if (process.env.HWR_TEST_DATABASE_URL) return Promise.resolve(process.env.HWR_TEST_DATABASE_URL);
  serverUrl ??= (async () => {
    const dir = defaultTempClusterDir();
    const database = await startEmbeddedPostgres({ dataDir: dir, port: await freePort() });
    after(async () => {
      await database.stop();
      await rm(dir, { recursive: true, force: true });
    });
    return database.url;
  })();
  return serverUrl;
}

/**
 * Creates an empty database and returns its URL; it is dropped after the test file.
 * Call it at the top level of a test file (its clean-up registers with `after`).
 */
export async function createTestDatabase(): Promise<string> {
  const base = await testServerUrl();
  const name = `hwr_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client(base);
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  // A cluster started here is deleted whole after the file; a shared one keeps running.
  if (process.env.HWR_TEST_DATABASE_URL)
    after(async () => {
      const client = new pg.Client(base);
      await client.connect();
      await client.query(`drop database if exists ${name} with (force)`);
      await client.end();
    });
  const url = new URL(base);
  url.pathname = `/${name}`;
  return url.toString();
}
