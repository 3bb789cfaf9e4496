import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, describe, test } from 'node:test';
import { openDatabase, type Database } from '../../src/db/database.ts';
import { migrate } from '../../src/store/migrate.ts';
import { appendToStream } from '../../src/store/append-to-stream.ts';
import { ConcurrencyError } from '../../src/store/concurrency-error.ts';
import { readAll, LOG_START, type LogCheckpoint } from '../../src/store/read-all.ts';
import { readStream } from '../../src/store/read-stream.ts';
import type { DomainEvent, RecordedEvent } from '../../domain/events.ts';
import { createTestDatabase } from '../support/database.ts';

const secretRotated = (n: number): DomainEvent => ({
  type: 'WebhookSecretRotated',
  data: { webhookSecretSha256: `fingerprint-${n}`, rotatedAt: new Date(0).toISOString() },
});

const db: Database = openDatabase(await createTestDatabase(), { max: 30 });
await migrate(db.pool);
after(() => db.close());

async function readWholeLog(from: LogCheckpoint = LOG_START): Promise<{ events: RecordedEvent[]; checkpoint: LogCheckpoint }> {
  const events: RecordedEvent[] = [];
  let checkpoint = from;
  for (;;) {
    const page = await readAll(db.pool, checkpoint, 100);
    events.push(...page.events);
    checkpoint = page.checkpoint;
    if (page.events.length < 100) return { events, checkpoint };
  }
}

describe('event store', () => {
  test('appends at the expected version and reads the stream back in order', async () => {
    const stream = `account-${randomUUID()}`;
    const first = await appendToStream(db.pool, stream, 0, [secretRotated(1), secretRotated(2)], { actor: 'test' });
    assert.deepEqual(
      first.map((event) => event.streamVersion),
      [1, 2],
    );
    await appendToStream(db.pool, stream, 2, [secretRotated(3)]);
    const events = await readStream(db.pool, stream);
    assert.deepEqual(
      events.map((event) => event.streamVersion),
      [1, 2, 3],
    );
    assert.equal(events[0].type, 'WebhookSecretRotated');
    assert.deepEqual(events[2].data, { webhookSecretSha256: 'fingerprint-3', rotatedAt: new Date(0).toISOString() });
    assert.equal(events[0].metadata.actor, 'test');
    assert.equal(events[0].metadata.schemaVersion, 1);
  });

  test('a stale expected version is a typed concurrency error and appends nothing', async () => {
    const stream = `account-${randomUUID()}`;
    await appendToStream(db.pool, stream, 0, [secretRotated(1)]);
    await assert.rejects(appendToStream(db.pool, stream, 0, [secretRotated(2)]), ConcurrencyError);
    assert.equal((await readStream(db.pool, stream)).length, 1);
  });

  test('20 concurrent appends at the same expected version: exactly one succeeds', async () => {
    const stream = `account-${randomUUID()}`;
    await appendToStream(db.pool, stream, 0, [secretRotated(0)]);
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, (_, n) => db.transaction((client) => appendToStream(client, stream, 1, [secretRotated(n + 1)]))),
    );
    const fulfilled = results.filter((result) => result.status === 'fulfilled');
    const rejected = results.filter((result) => result.status === 'rejected');
    assert.equal(fulfilled.length, 1);
    assert.equal(rejected.length, 19);
    for (const result of rejected) assert.ok((result as PromiseRejectedResult).reason instanceof ConcurrencyError);
    assert.deepEqual(
      (await readStream(db.pool, stream)).map((event) => event.streamVersion),
      [1, 2],
    );
  });

  test('whole-log reading never passes a transaction that is still open', async () => {
    const { checkpoint: start } = await readWholeLog();
    const slowStream = `account-${randomUUID()}`;
    const fastStream = `account-${randomUUID()}`;
    const slow = await db.pool.connect();
    try {
      await slow.query('begin');
      // The slow transaction appends first, so its event has the lower global position...
      await appendToStream(slow, slowStream, 0, [secretRotated(1)]);
      // ...and a later transaction commits before it.
      await appendToStream(db.pool, fastStream, 0, [secretRotated(2)]);

      const whileOpen = await readWholeLog(start);
      assert.equal(
        whileOpen.events.some((event) => event.streamId === slowStream),
        false,
      );
      // The reader must not pass the open transaction: the later commit is held back too.
      assert.equal(
        whileOpen.events.some((event) => event.streamId === fastStream),
        false,
      );

      await slow.query('commit');
    } finally {
      slow.release();
    }
    // Visible once no older transaction is in flight anywhere in the cluster (transaction ids
    // are cluster-wide, and other test files run transactions of their own meanwhile).
    let afterCommit = await readWholeLog(start);
    for (let tries = 0; tries < 200 && !afterCommit.events.some((event) => event.streamId === fastStream); tries++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      afterCommit = await readWholeLog(start);
    }
    const streams = afterCommit.events.map((event) => event.streamId);
    assert.ok(streams.includes(slowStream));
    assert.ok(streams.includes(fastStream));
    assert.ok(streams.indexOf(slowStream) < streams.indexOf(fastStream), 'commit order follows transaction order');
    // Reading on from the returned checkpoint sees nothing twice.
    const again = await readWholeLog(afterCommit.checkpoint);
    assert.equal(again.events.length, 0);
  });
});
