// `npm test`: type-check, check formatting and lint (Biome: format, lint rules, import cycles),
// unused exports and files (knip) and the folders' dependency rules (dependency-cruiser), then
// start one embedded PostgreSQL for the whole run and run every test file with node:test (each
// integration test file creates its own database).
// Extra arguments select test files: `npm test -- test/unit`. SKIP_TYPECHECK=1 skips the checks.
import { spawn } from 'node:child_process';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startEmbeddedPostgres, freePort } from '../src/db/embedded-postgres.ts';

const root = path.resolve(import.meta.dirname, '..');
const args = process.argv.slice(2);

function run(command: string, commandArgs: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(command, commandArgs, { cwd: root, stdio: 'inherit', env });
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

if (!process.env.SKIP_TYPECHECK) {
  console.log('# tsc --noEmit');
  const code = await run(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '--noEmit', '-p', root]);
  if (code !== 0) process.exit(code);
  // `npx biome format --write .` fixes formatting; biome.json says which rules are off and why.
  console.log('# biome ci (format, lint, import cycles)');
  const style = await run(process.execPath, [path.join(root, 'node_modules/@biomejs/biome/bin/biome'), 'ci', '--reporter=summary', root]);
  if (style !== 0) process.exit(style);
  console.log('# knip (unused files and exports)');
  const unused = await run(process.execPath, [
    path.join(root, 'node_modules/knip/bin/knip.js'),
    '--include',
    'files,exports,types,duplicates',
  ]);
  if (unused !== 0) process.exit(unused);
  // .dependency-cruiser.mjs: which folder may import which (docs/decisions/0013-folder-layers.md).
  console.log('# depcruise (folder layers, folder cycles, internals)');
  const layers = await run(process.execPath, [
    path.join(root, 'node_modules/dependency-cruiser/bin/dependency-cruiser.mjs'),
    '--config',
    '.dependency-cruiser.mjs',
    '--output-type',
    'err',
    'src',
    'domain',
    'projections',
  ]);
  if (layers !== 0) process.exit(layers);
}

const clusterDir = path.join(os.tmpdir(), `hwr-test-pg-${process.pid}`);
// Every temp file a test makes goes under one directory, removed after the run.
const testTmp = await mkdtemp(path.join(os.tmpdir(), 'hwr-test-tmp-'));
await chmod(testTmp, 0o711); // an embedded PostgreSQL started by a test runs as `postgres` when we are root
const database = await startEmbeddedPostgres({ dataDir: clusterDir, port: await freePort() });
let exitCode = 1;
try {
  const selection = args.length > 0 ? args : ['test/'];
  const files = selection.flatMap((entry) => (entry.endsWith('.ts') ? [entry] : [`${entry.replace(/\/$/, '')}/**/*.test.ts`]));
  exitCode = await run(
    process.execPath,
    ['--test', `--test-concurrency=${Math.max(2, os.availableParallelism())}`, '--test-timeout=600000', ...files],
    { ...process.env, HWR_TEST_DATABASE_URL: database.url, TMPDIR: testTmp },
  );
} finally {
  await database.stop();
  await rm(clusterDir, { recursive: true, force: true });
  await rm(testTmp, { recursive: true, force: true });
}
process.exit(exitCode);
