// `hwr recognize` as a user runs it: a real process, real models, real files.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { PageResult } from '../../src/recognition/page/page-result.ts';
import { PRINTED_PAGE } from '../support/recognition-fixtures.ts';

const main = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));
let root: string;

before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'hwr-recognize-cli-'));
});

after(() => rm(root, { recursive: true, force: true }));

function hwr(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [main, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, MODEL_DIR: '' } });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

test('hwr recognize --json prints one page result per image; a bad image fails alone', async () => {
  const corrupt = path.join(root, 'corrupt.jpg');
  await writeFile(corrupt, Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01, 0x02, 0x03]));
  const { code, stdout, stderr } = await hwr(['recognize', corrupt, PRINTED_PAGE.imagePath, '--json']);
  assert.equal(code, 1, stderr);
  assert.match(stderr, /corrupt\.jpg: \[image_unreadable\]/);
  const pages = stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as PageResult);
  assert.equal(pages.length, 1);
  assert.equal(pages[0].image.name, path.basename(PRINTED_PAGE.imagePath));
  assert.equal(pages[0].pageNumber, 2);
  assert.match(pages[0].regions[0].lines[0].text, /Holmwood introduced him to me/);
});

test('hwr recognize prints the text in reading order', async () => {
  const { code, stdout, stderr } = await hwr(['recognize', PRINTED_PAGE.imagePath]);
  assert.equal(code, 0, stderr);
  assert.match(stdout, /^== .*fondue_en_print_dracula_page_51\.png \(2550x3300, \d+ lines, \d+ ms\)\n/);
  const text = stdout.split('\n').slice(1).join('\n');
  assert.ok(text.indexOf('Holmwood introduced him') < text.indexOf('Mina, pray for my happiness'));
});

test('hwr recognize without images prints its usage and exits 2', async () => {
  const { code, stderr } = await hwr(['recognize']);
  assert.equal(code, 2);
  assert.match(stderr, /usage: hwr recognize IMAGE\.\.\. \[--json\]/);
  const unknown = await hwr(['recognize', '--fast', PRINTED_PAGE.imagePath]);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /unknown option --fast/);
});
