// bench/lib/recognition-aims.ts: bench:recognize's in-process aims, judged on the figures given.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { inProcessAimLines } from '../../bench/lib/recognition-aims.ts';

const MB = 1024 * 1024;

test('each in-process aim is judged on its own figure', () => {
  assert.deepEqual(inProcessAimLines({ handwrittenSeconds: 0.94, printedSeconds: 1.5, peakBytes: 693 * MB }), [
    '- a handwritten page: 0.94 s; aim: at most 0.9 s — not met',
    '- a printed page: 1.50 s; aim: at most 1.5 s — met',
    '- peak memory (RSS): 693 MB; aim: at most 600 MB — not met',
  ]);
  assert.deepEqual(inProcessAimLines({ handwrittenSeconds: 0.9, printedSeconds: 1.51, peakBytes: 600 * MB }), [
    '- a handwritten page: 0.90 s; aim: at most 0.9 s — met',
    '- a printed page: 1.51 s; aim: at most 1.5 s — not met',
    '- peak memory (RSS): 600 MB; aim: at most 600 MB — met',
  ]);
});

test('a kind of page the run did not read has no line', () => {
  assert.deepEqual(inProcessAimLines({ handwrittenSeconds: 0.5, printedSeconds: null, peakBytes: 100 * MB }), [
    '- a handwritten page: 0.50 s; aim: at most 0.9 s — met',
    '- peak memory (RSS): 100 MB; aim: at most 600 MB — met',
  ]);
});
