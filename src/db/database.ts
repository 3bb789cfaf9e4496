// The PostgreSQL pool and transactions.
import pg from 'pg';
import { createLogger, type Logger } from '../platform/logger.ts';

// Timestamps come back as Date, bigint as string (global positions can exceed 2^53).
export type Queryable = Pick<pg.PoolClient, 'query'>;

export interface Database {
  pool: pg.Pool;
  url: string;
  transaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export interface DatabaseOptions {
  max?: number;
  applicationName?: string;
  /**
   * Connecting, and waiting for a pooled connection, fails after this long (a database that
   * accepts TCP and never answers would otherwise hang a start or a request for ever). 0: none.
   */
  connectTimeoutMs?: number;
  /** PostgreSQL's statement_timeout for every session of the pool (0: none). Long operations set their own. */
  statementTimeoutMs?: number;
  /**
   * How long the client waits for a query's answer before it gives up on the connection (0: no
   * limit). The server-side statement timeout cannot end a wait whose query never reached the
   * server or whose answer never comes back (a partition, a silent proxy); longer than the
   * statement timeout, so the server's own cancel normally answers first.
   */
  queryTimeoutMs?: number;
  /**
   * PostgreSQL's idle_in_transaction_session_timeout for every session of the pool (0: none): the
   * server ends a session that sits inside a transaction this long, rolling it back and releasing
   * its locks. Our transactions never wait on anything but the database; one a client gave up on
   * across a partition, behind a proxy that keeps the server's end alive (its keepalives see the
   * proxy, not the client), would otherwise hold its job stream's lock until someone notices.
   */
  idleInTransactionTimeoutMs?: number;
}

/** A query_timeout for the operations that lift the statement timeout (setTimeout's largest delay, 24.8 days). */
export const UNBOUNDED_QUERY_TIMEOUT_MS = 2 ** 31 - 1;

/** The pg pool settings shared by our pool and pg-boss's: timeouts and TCP keepalive. */
export function poolTimeouts(
  options: Pick<DatabaseOptions, 'connectTimeoutMs' | 'statementTimeoutMs' | 'queryTimeoutMs' | 'idleInTransactionTimeoutMs'>,
): Pick<
  pg.PoolConfig,
  | 'connectionTimeoutMillis'
  | 'statement_timeout'
  | 'query_timeout'
  | 'idle_in_transaction_session_timeout'
  | 'keepAlive'
  | 'keepAliveInitialDelayMillis'
> {
  return {
    connectionTimeoutMillis: options.connectTimeoutMs ?? 0,
    // Sent in the startup packet, so it is the session's default: `reset statement_timeout` returns to it.
    ...(options.statementTimeoutMs ? { statement_timeout: options.statementTimeoutMs } : {}),
    // pg rejects the query with "Query read timeout"; the pool discards a connection whose query
    // timed out (pool.query releases it with the error, inTransaction below does the same), and
    // pg destroys the socket of a client ended with a query in flight.
    ...(options.queryTimeoutMs ? { query_timeout: options.queryTimeoutMs } : {}),
    ...(options.idleInTransactionTimeoutMs ? { idle_in_transaction_session_timeout: options.idleInTransactionTimeoutMs } : {}),
    // A peer that vanished without closing (a partition, a dead host) is found by keepalive probes
    // after 10 s of silence rather than by the kernel's 2 hours.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
  };
}

export function openDatabase(url: string, options: DatabaseOptions = {}, log?: Logger): Database {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max ?? 20,
    application_name: options.applicationName ?? 'hwr',
    ...poolTimeouts(options),
  });
  // A client that loses its connection (database restart) must not crash the process; the pool
  // drops an idle one and opens a new one when needed, and checkOut() forwards a checked-out
  // one's error here. Logged (to stderr when the caller gave no logger), never swallowed.
  const poolLog = log ?? createLogger('warn', { toStderr: true });
  pool.on('error', (error: Error & { code?: string }, client?: pg.PoolClient) => {
    poolLog.warn(
      {
        // Not the error object itself: pg-pool hangs the whole client (connection parameters, buffers) on it.
        err: { type: error.name, message: error.message, code: error.code },
        code: error.code,
        component: 'pg-pool',
        application_name: options.applicationName ?? 'hwr',
        checked_out: client !== undefined && checkedOut.has(client),
      },
      'database connection lost',
    );
  });
  retireIdleAfterOutage(pool);
  return {
    pool,
    url,
    transaction: (work) => inTransaction(pool, work),
    close: () => pool.end(),
  };
}

/**
 * When a connection turns out unusable (the database went away under it, or a query on it got no
 * answer), the connections idle in the pool are likely dead too: a failover leaves them on the old
 * server, a partition cut them. Each would cost the next request that takes it a query timeout,
 * so they are retired at once; the pool opens new ones as needed. A retired connection is an idle
 * connection lost to the pool (removed, and logged and counted as such).
 */
function retireIdleAfterOutage(pool: pg.Pool): void {
  const idle = new Set<pg.PoolClient>();
  pool.on('acquire', (client) => idle.delete(client));
  pool.on('remove', (client) => idle.delete(client));
  // An idle connection lost by itself is out of the pool already.
  pool.on('error', (_error, client) => idle.delete(client));
  pool.on('release', (error: Error | undefined, client: pg.PoolClient) => {
    if (!error) {
      idle.add(client);
      return;
    }
    idle.delete(client);
    if (!isDatabaseUnavailable(error)) return;
    for (const other of idle) {
      idle.delete(other);
      // The pool drops an idle connection that reports an error there and then (a next request
      // must not take it); its socket goes after.
      other.emit('error', new Error('connection retired: another connection found the database unavailable'));
      (other as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
    }
  });
}

export async function inTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await checkOut(pool);
  let result: T;
  try {
    await client.query('begin');
    result = await work(client);
    await client.query('commit');
  } catch (error) {
    if (isDatabaseUnavailable(error)) {
      // A connection that went away, or whose query got no answer in time: a rollback would wait
      // behind the unanswered query. Discarding the connection ends the session, and PostgreSQL
      // rolls the transaction back itself.
      client.release(error as Error);
    } else {
      // A rollback that fails too leaves the connection in doubt: discard it.
      const rollbackError = await client.query('rollback').then(
        () => undefined,
        (failure: Error) => failure,
      );
      client.release(rollbackError);
    }
    throw error;
  }
  client.release();
  return result;
}

/**
 * A client for more than one query. pg-pool drops its own error listener while a client is
 * checked out, so a connection lost mid-use (a database restart) would emit an unhandled
 * 'error' and end the process. The query in flight rejects anyway, which is what callers see;
 * the error itself goes to the pool's 'error' listeners (logged and counted like an idle
 * client's), or, on a pool without any, is dropped rather than ending the process.
 */
export async function checkOut(pool: pg.Pool): Promise<pg.PoolClient> {
  const client = await pool.connect();
  if (!guarded.has(client)) {
    guarded.add(client);
    client.on('error', (error: Error) => {
      if (checkedOut.has(client) && pool.listenerCount('error') > 0) pool.emit('error', error, client);
    });
  }
  // pg-pool gives the client a new release() at every checkout; this one also marks it idle again.
  checkedOut.add(client);
  const release = client.release;
  client.release = (error?: Error | boolean) => {
    checkedOut.delete(client);
    return release(error);
  };
  return client;
}

const guarded = new WeakSet<pg.PoolClient>();
/** Clients between checkOut() and release(): their connection errors are not the pool's idle ones. */
const checkedOut = new WeakSet<pg.PoolClient>();

/** Where a URL points, without its credentials (for messages). */
export function describeDatabaseUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.hostname || 'localhost'}:${parsed.port || '5432'}${parsed.pathname}`;
  } catch {
    return 'the configured database';
  }
}

/** One round trip that reads nothing: the database answers (readiness, start-up, waiting out an outage). */
export async function pingDatabase(db: Queryable): Promise<void> {
  await db.query('select 1');
}

/**
 * One round trip before anything else, so a database that cannot be reached fails the start with
 * a message that says so (pg's own is "timeout expired" or "Connection terminated due to connection timeout").
 */
export async function checkConnection(db: Database, connectTimeoutMs: number): Promise<void> {
  try {
    await pingDatabase(db.pool);
  } catch (error) {
    const message = (error as Error).message;
    const timedOut = /timeout/i.test(message);
    throw new Error(
      timedOut
        ? `could not connect to PostgreSQL at ${describeDatabaseUrl(db.url)}: no answer within ${connectTimeoutMs} ms (DATABASE_CONNECT_TIMEOUT_MS)`
        : `could not connect to PostgreSQL at ${describeDatabaseUrl(db.url)}: ${message}`,
      { cause: error },
    );
  }
}

const UNAVAILABLE_CODES = new Set([
  '57P01',
  '57P02',
  '57P03',
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);
const UNAVAILABLE_MESSAGES = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'Client has encountered a connection error',
  'Client was closed and is not queryable',
  'terminating connection',
  'the database system is',
  // pg's query_timeout: no answer from the server in time (DATABASE_QUERY_TIMEOUT_MS).
  'Query read timeout',
];

/**
 * The database could not be reached or went away under a query (a restart, a failover, a lost
 * connection): says nothing about the work that was asked, and is worth trying again once the
 * database answers. Class 08 (connection exception) and 57P01-03 (shutdown, crash, starting up),
 * pg's own connection errors, and the socket errors under them.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (UNAVAILABLE_CODES.has(code) || code.startsWith('08'))) return true;
  return UNAVAILABLE_MESSAGES.some((message) => error.message.includes(message));
}

/**
 * Waits until the database answers a query, checking every 250 ms (up to 2 s apart), for at most
 * `maxWaitMs`; false when it did not come back in time or `signal` aborted.
 */
export async function waitForDatabase(pool: pg.Pool, maxWaitMs: number, signal?: AbortSignal): Promise<boolean> {
  const deadline = Date.now() + maxWaitMs;
  for (let delay = 250; ; delay = Math.min(delay * 2, 2000)) {
    if (signal?.aborted) return false;
    try {
      await pingDatabase(pool);
      return true;
    } catch {
      if (Date.now() + delay > deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
}
