// bench/lib/htr-pages.ts: htr-pages' ground truth as read by the benches, and the lines it leaves
// untranscribed, which set a page aside from the guard evaluation (ADR 0050).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { pagesFromDataset, untranscribedLines } from '../../bench/lib/htr-pages.ts';

const box = (top: number): [number, number][] => [
  [10, top],
  [200, top],
  [200, top + 30],
  [10, top + 30],
];

test('a line drawn and left without text is untranscribed; a line without a polygon is not a line', () => {
  const dataset = mkdtempSync(path.join(tmpdir(), 'htr-pages-'));
  try {
    const page = {
      page: 'faded_0005',
      hand_or_document: 'source:faded',
      lang: 'fr',
      width: 300,
      height: 400,
      regions: [{ id: 'r1', type: 'paragraph', polygon: box(0) }],
      lines: [
        { id: 'l1', region_id: 'r1', baseline: null, polygon: box(10), text: 'qui me reveille de bon matin ;' },
        { id: 'l2', region_id: 'r1', baseline: null, polygon: box(50), text: '' },
        { id: 'l3', region_id: 'r1', baseline: null, polygon: box(90), text: '  ' },
        { id: 'l4', region_id: 'r1', baseline: null, polygon: null, text: '' },
        { id: 'l5', region_id: 'r1', baseline: null, polygon: box(130), text: 'je suis prêt' },
      ],
    };
    const members = path.join(dataset, 'members');
    mkdirSync(members);
    writeFileSync(path.join(members, 'faded_0005.json'), JSON.stringify(page));
    writeFileSync(path.join(members, 'faded_0005.jpg'), Buffer.from([0xff, 0xd8, 0xff, 0xd9]));
    execFileSync('tar', ['-cf', path.join(dataset, 'val-000.tar'), '-C', members, 'faded_0005.json', 'faded_0005.jpg']);

    const [read] = pagesFromDataset(dataset, 'val', path.join(dataset, 'images'));
    assert.deepEqual(
      read.truth.regions.flatMap((region) => region.lines.map((line) => line.id)),
      ['l1', 'l2', 'l3', 'l5'],
    );
    assert.deepEqual(read.truth.warnings, ['line l4 has no polygon']);
    const texts = read.truth.regions.flatMap((region) => region.lines.map((line) => line.text));
    assert.equal(untranscribedLines(texts), 2);
    assert.equal(untranscribedLines(texts.filter((text) => text.trim() !== '')), 0);
  } finally {
    rmSync(dataset, { recursive: true, force: true });
  }
});
