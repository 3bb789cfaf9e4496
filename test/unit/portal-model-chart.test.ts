// The Models page's chart of validation CER per epoch (src/portal/model-chart.ts): an SVG drawn
// from the progress history, with round ticks, the lowest epoch marked, and words for a screen reader.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { validationCerChart } from '../../src/portal/model-chart.ts';

const points = (cers: number[]) => cers.map((validation_cer, index) => ({ epoch: index + 1, validation_cer }));
const all = (svg: string, pattern: RegExp) => [...svg.matchAll(pattern)].map((match) => match[1]);

test('no epoch yet: no chart', () => {
  assert.equal(validationCerChart([]).value, '');
});

test('one point per epoch, the line through them, the lowest marked, round ticks from 0 up to the highest', () => {
  const svg = validationCerChart(points([0.31, 0.22, 0.18, 0.19])).value;
  assert.equal((svg.match(/<circle class="cer-point/g) ?? []).length, 4);
  assert.equal((svg.match(/<circle class="cer-point best"/g) ?? []).length, 1);
  assert.match(svg, /<title>Epoch 3: 18\.0 %<\/title><\/circle>/);
  assert.deepEqual(all(svg, /text-anchor="end">([^<]+)</g), ['0 %', '10 %', '20 %', '30 %', '40 %']);
  assert.deepEqual(all(svg, /text-anchor="middle">(\d+)</g), ['1', '2', '3', '4']);
  assert.equal((/points="([^"]+)"/.exec(svg)?.[1] ?? '').split(' ').length, 4);
  assert.match(svg, /role="img" aria-labelledby="cer-chart-title cer-chart-desc"/);
  assert.match(svg, /4 epochs: validation CER 31\.0 % after epoch 1, 19\.0 % after epoch 4, lowest 18\.0 % \(epoch 3\)\./);
  assert.doesNotMatch(svg, /style=/, 'no inline style: the CSP forbids it');
});

test('small and large CERs get round ticks; one epoch sits in the middle; many epochs get at most about ten labels', () => {
  assert.deepEqual(all(validationCerChart(points([0.012])).value, /text-anchor="end">([^<]+)</g), ['0 %', '0.5 %', '1 %', '1.5 %']);
  assert.deepEqual(all(validationCerChart(points([2.4, 0.9])).value, /text-anchor="end">([^<]+)</g), [
    '0 %',
    '50 %',
    '100 %',
    '150 %',
    '200 %',
    '250 %',
  ]);
  assert.match(validationCerChart(points([0.2])).value, /<circle class="cer-point best" cx="300"/);
  const labels = all(validationCerChart(points(Array.from({ length: 40 }, () => 0.1))).value, /text-anchor="middle">(\d+)</g);
  assert.ok(labels.length <= 11 && labels.includes('40') && labels.includes('1'), labels.join(','));
});
