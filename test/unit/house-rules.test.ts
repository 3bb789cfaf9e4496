// The rules of the house that the dependency rules (.dependency-cruiser.mjs) cannot see, because
// they are about SQL text, not imports (docs/decisions/0013-folder-layers.md): every table has one
// owning module, so no SQL is sent from the edges of the service, and pg-boss's tables are queried
// only by the queue adapter.
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';

const root = path.resolve(import.meta.dirname, '../..');

async function sourceFiles(folder: string): Promise<string[]> {
  const entries = await readdir(path.join(root, folder), { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => path.relative(root, path.join(entry.parentPath, entry.name)));
}

/** `file:line` of each line of the files under `folders` that matches `pattern`. */
async function linesMatching(folders: string[], pattern: RegExp): Promise<string[]> {
  const hits: string[] = [];
  for (const folder of folders) {
    for (const file of await sourceFiles(folder)) {
      const lines = (await readFile(path.join(root, file), 'utf8')).split('\n');
      lines.forEach((line, index) => {
        if (pattern.test(line)) hits.push(`${file}:${index + 1}`);
      });
    }
  }
  return hits;
}

const EDGES = ['src/http', 'src/portal', 'src/workers', 'src/server', 'src/metrics', 'src/cli'];

test('no SQL is sent from the edges of the service: HTTP, portal, workers, servers, metrics and the command line call the owning modules', async () => {
  assert.deepEqual(await linesMatching(EDGES, /\.query\s*[<(]/), []);
});

test("pg-boss's tables are queried only by the queue adapter (src/queue)", async () => {
  const folders = (await readdir(path.join(root, 'src'), { withFileTypes: true }))
    .filter((entry) => entry.isDirectory() && entry.name !== 'queue')
    .map((entry) => `src/${entry.name}`);
  assert.deepEqual(await linesMatching([...folders, 'projections'], /\bpgboss\./), []);
});

test('the checks see what they look for: a query and a pg-boss table in the adapter are found', async () => {
  assert.notDeepEqual(await linesMatching(['src/queue'], /\bpgboss\./), []);
  assert.notDeepEqual(await linesMatching(['src/store'], /\.query\s*[<(]/), []);
});
