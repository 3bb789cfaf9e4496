// What `hwr submit PATH…` zips (src/client/scan-input.ts): an image's own layout file goes with it,
// named as the image is in the ZIP, unless two images would share the layout's name.
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import yauzl from 'yauzl';
import { prepareScan } from '../../src/client/scan-input.ts';

const work = await mkdtemp(path.join(os.tmpdir(), 'hwr-scan-input-'));
after(() => rm(work, { recursive: true, force: true }));

async function entriesOf(zipPath: string): Promise<string[]> {
  return new Promise((resolve, reject) =>
    yauzl.open(zipPath, { lazyEntries: true }, (error, zip) => {
      if (error || !zip) return reject(error);
      const names: string[] = [];
      zip.on('entry', (entry: { fileName: string }) => {
        names.push(entry.fileName);
        zip.readEntry();
      });
      zip.on('end', () => resolve(names));
      zip.readEntry();
    }),
  );
}

async function files(folder: string, names: string[]): Promise<string> {
  const dir = path.join(work, folder);
  await mkdir(dir, { recursive: true });
  for (const name of names) await writeFile(path.join(dir, name), name.endsWith('.xml') ? '<PcGts/>' : 'image bytes');
  return dir;
}

test('a folder: each image with its own layout beside it', async () => {
  const dir = await files('folder', ['p1.jpg', 'p1.xml', 'p2.png', 'notes.xml']);
  const scan = await prepareScan([dir]);
  try {
    assert.equal(scan.images, 2);
    assert.equal(scan.layouts, 1);
    assert.deepEqual((await entriesOf(scan.zipPath)).sort(), ['p1.jpg', 'p1.xml', 'p2.png']);
  } finally {
    await scan.cleanUp();
  }
});

test('images that would share a layout name in the ZIP (p1.png, p1.jp2 from two folders) take no layout', async () => {
  const a = await files('a', ['p1.png', 'p1.xml']);
  const b = await files('b', ['p1.jp2', 'p1.xml']);
  const scan = await prepareScan([path.join(a, 'p1.png'), path.join(b, 'p1.jp2')]);
  try {
    assert.equal(scan.layouts, 0);
    assert.deepEqual((await entriesOf(scan.zipPath)).sort(), ['p1.jp2', 'p1.png']);
  } finally {
    await scan.cleanUp();
  }
});
