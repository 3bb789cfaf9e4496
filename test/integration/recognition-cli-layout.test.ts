// `hwr recognize IMAGE --layout FILE.xml`: a real process reads a real page along the lines of
// its own ALTO file; an unusable file is reported with its code and the exit code is 1.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { PageResult } from '../../src/recognition/page/page-result.ts';

const main = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));
const FIXTURES = path.resolve(import.meta.dirname, '../fixtures/export');
const image = path.join(FIXTURES, 'cremma19_zola_f207.jpg');
const layout = path.join(FIXTURES, 'cremma19_zola_f207.xml');
let root: string;

before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'hwr-recognize-layout-'));
});
after(() => rm(root, { recursive: true, force: true }));

function hwr(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [main, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

test("--layout keeps the file's lines, ids and order and reads them", async () => {
  const { code, stdout, stderr } = await hwr(['recognize', image, '--layout', layout, '--json']);
  assert.equal(code, 0, stderr);
  const page = JSON.parse(stdout.trim()) as PageResult;
  assert.equal(page.layoutSource, 'uploaded');
  const ids = [...(await readFile(layout, 'utf8')).matchAll(/<TextLine[^>]*ID="([^"]+)"/g)].map((match) => match[1]);
  const lines = page.regions.flatMap((region) => region.lines);
  assert.deepEqual(
    lines.map((line) => line.id),
    ids,
  );
  assert.ok(lines.filter((line) => line.text !== '').length >= 20);
  assert.ok(!page.producer.models.some((model) => model.role === 'detection'));
});

test('--layout with an unusable file: its code on stderr, exit code 1; misuse: exit code 2', async () => {
  const bad = path.join(root, 'bad.xml');
  await writeFile(bad, '<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><x>&e;</x>');
  const refused = await hwr(['recognize', image, '--layout', bad]);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /\[layout_unsafe_xml\] .*bad\.xml/);
  const twoImages = await hwr(['recognize', image, image, '--layout', layout]);
  assert.equal(twoImages.code, 2);
  assert.match(twoImages.stderr, /--layout takes one image/);
});
