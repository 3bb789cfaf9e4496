// bench/lib/throughput-table.ts: bench:throughput's ratios against the peers and the aims.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { aimLines, type ThroughputRow, throughputTable } from '../../bench/lib/throughput-table.ts';

const rows: ThroughputRow[] = [
  { label: 'ours, cold', role: 'ours', pages: 10, seconds: 20, cpuSeconds: 30, firstPageSeconds: 6, peakMiB: 900, peakNote: 'service' },
  { label: 'ours, warm', role: 'ours', pages: 10, seconds: 10, cpuSeconds: 18, firstPageSeconds: 2, peakMiB: 880 },
  {
    label: 'tesseract',
    role: 'tesseract',
    pages: 10,
    seconds: 5,
    cpuSeconds: 12,
    firstPageSeconds: null,
    peakMiB: 200,
    peakNote: '100 × 2',
  },
  { label: 'ocrmypdf', role: 'ocrmypdf', pages: 10, seconds: 40, cpuSeconds: null, firstPageSeconds: null, peakMiB: null },
];

test('ours against each peer in pages per second, peers without ratios', () => {
  const lines = throughputTable(rows).split('\n');
  assert.equal(lines.length, 6);
  const cells = (line: string) => line.split('|').map((cell) => cell.trim());
  const cold = cells(lines[2]!);
  assert.deepEqual(cold.slice(1, -1), ['ours, cold', '10', '20.0', '0.500', '2.00', '3.00', '6.0', '900 (service)', '0.25×', '2.00×']);
  const warm = cells(lines[3]!);
  assert.deepEqual(warm.slice(-3, -1), ['0.50×', '4.00×']);
  const tesseract = cells(lines[4]!);
  assert.deepEqual(tesseract.slice(1, -1), ['tesseract', '10', '5.0', '2.000', '0.50', '1.20', '–', '200 (100 × 2)', '', '']);
  assert.equal(cells(lines[5]!)[6], 'n/a', 'no CPU time without GNU time');
  assert.equal(cells(lines[5]!)[8], 'n/a');
});

test('the aims are judged on the best warm run of ours', () => {
  assert.deepEqual(aimLines(rows), [
    "- Tesseract's text-only throughput is 2.00× ours (ours, warm); aim: at most 1.5× — not met",
    "- CPU per page: ours 1.50× Tesseract's (ours, warm): the throughput ratio where the cores are not shared",
    "- ours is 4.00× OCRmyPDF's throughput (ours, warm); aim: at least 5× — not met",
  ]);
  assert.deepEqual(aimLines(rows.filter((row) => row.role !== 'ours')), []);
});
