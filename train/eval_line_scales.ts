// Test-time scale (issue 12, item 4): each validation line of htr-lines read at several horizontal
// scales (the model-height line stretched along the writing by a factor, linear interpolation), in
// the service's code (onnxruntime-node, the manifest's beam search): CER and WER of each scale, of
// keeping the reading with the best mean greedy log-probability per frame (against scale 1 and over
// all), and of an oracle that keeps the best reading. docs/training.md, "Test-time choices".
//
//   node train/eval_line_scales.ts [MODEL_DIR] [SCALES] [--dataset DIR]
//   node train/eval_line_scales.ts models/hwr-htr-v3 1,1.15,1.25,1.4
import path from 'node:path';
import { parseArgs } from 'node:util';
import { decodeCtc } from '../src/recognition/decoding/ctc-decode.ts';
import type { LineInput } from '../bench/lib/htr-lines.ts';
import { LineErrors } from '../bench/lib/text-metrics.ts';
import { validationReader } from '../bench/lib/validation-reader.ts';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { dataset: { type: 'string', default: path.resolve(import.meta.dirname, '../../shared/datasets/htr-lines') } },
});
const dir = positionals[0] ?? 'models/hwr-htr-v3';
const scales = (positionals[1] ?? '1,1.25').split(',').map(Number);

/**
 * A line `height` px high stretched along x by `factor` (width kept even, linear interpolation);
 * the padding after its own columns is paper and keeps its width.
 */
function stretch(input: LineInput, height: number, factor: number): LineInput {
  const { data, contentWidth: width } = input;
  const padding = input.width - input.contentWidth;
  const out = Math.max(16, Math.round((width * factor) / 2) * 2);
  const paddedOut = out + padding;
  // with padding, the input's last column is paper: the padding's value
  const result = new Float32Array(paddedOut * height).fill(data[input.width - 1]);
  for (let y = 0; y < height; y += 1)
    for (let x = 0; x < out; x += 1) {
      const source = Math.min(width - 1, Math.max(0, ((x + 0.5) * width) / out - 0.5));
      const left = Math.floor(source);
      const right = Math.min(width - 1, left + 1);
      const t = source - left;
      const row = y * input.width;
      result[y * paddedOut + x] = data[row + left] * (1 - t) + data[row + right] * t;
    }
  return { data: result, width: paddedOut, contentWidth: out };
}

/** Mean over frames of the best class's log-softmax. */
function meanBestLogProbability(scores: Float32Array, steps: number, count: number): number {
  let total = 0;
  for (let t = 0; t < steps; t += 1) {
    let max = -Infinity;
    for (let c = 0; c < count; c += 1) max = Math.max(max, scores[t * count + c]);
    let sum = 0;
    for (let c = 0; c < count; c += 1) sum += Math.exp(scores[t * count + c] - max);
    total -= Math.log(sum);
  }
  return total / steps;
}

function charErrors(hypothesis: string, reference: string): number {
  const errors = new LineErrors();
  errors.add(hypothesis, reference);
  return errors.charEdits;
}

async function main(): Promise<void> {
  const reader = await validationReader(dir, values.dataset);
  const { rec, classes } = reader;
  const errors = new Map<string, LineErrors>();
  const add = (key: string, hypothesis: string, reference: string): void => {
    if (!errors.has(key)) errors.set(key, new LineErrors());
    errors.get(key)!.add(hypothesis, reference);
  };
  for (const line of reader.lines) {
    const base = await reader.input(line);
    const reads: { scale: number; greedy: string; beam: string; score: number }[] = [];
    for (const scale of scales) {
      // runModel hands the input's buffer to the inference thread: each run gets its own copy
      const input = scale === 1 ? { ...base, data: base.data.slice() } : stretch(base, rec.inputHeight, scale);
      const output = await reader.run(input);
      const { steps, count } = output;
      reads.push({
        scale,
        greedy: decodeCtc(output.scores, 0, count, steps, classes, true).map((c) => c.text).join(''),
        beam: reader
          .beam(line, output)
          .map((c) => c.text)
          .join(''),
        score: meanBestLogProbability(output.scores, steps, count),
      });
    }
    const surest = (candidates: typeof reads) => candidates.reduce((a, b) => (b.score > a.score ? b : a));
    for (const read of reads) {
      add(`greedy, scale ${read.scale}`, read.greedy, line.text);
      add(`beam, scale ${read.scale}`, read.beam, line.text);
    }
    if (reads.length > 1) {
      for (const read of reads.slice(1)) add(`beam, surer of ${reads[0].scale} and ${read.scale}`, surest([reads[0], read]).beam, line.text);
      add('beam, surest of all', surest(reads).beam, line.text);
      add('beam, oracle of all', reads.reduce((a, b) => (charErrors(b.beam, line.text) < charErrors(a.beam, line.text) ? b : a)).beam, line.text);
    }
  }
  for (const [key, e] of errors) console.log(`${key.padEnd(32)} CER ${((100 * e.charEdits) / e.chars).toFixed(2)} %  WER ${((100 * e.wordEdits) / e.words).toFixed(2)} %`);
}

await main();
