// Test-time augmentation that keeps the frames where they are (issue 12, item 4): each validation
// line of htr-lines read as it is and as a few variants of the same width (shifted a pixel up or
// down, ink thickened or thinned, darker or lighter, sheared), and the variants' per-frame
// log-probabilities averaged before decoding. Unlike a change of scale (eval_line_scales.ts), the
// variants put their character spikes on the same frames, so the mean is a sharper reading of the
// same frames, not two half spikes. CER and WER of each variant alone (greedy) and of each set of
// variants (greedy and the manifest's beam search). docs/training.md, "Test-time choices".
//
//   node train/eval_tta.ts [MODEL_DIR] [--dataset DIR] [--sets id+up+down,id+thick+thin]
import path from 'node:path';
import { parseArgs } from 'node:util';
import { decodeCtc } from '../src/recognition/decoding/ctc-decode.ts';
import { LineErrors } from '../bench/lib/text-metrics.ts';
import { validationReader } from '../bench/lib/validation-reader.ts';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    dataset: { type: 'string', default: path.resolve(import.meta.dirname, '../../shared/datasets/htr-lines') },
    sets: { type: 'string', default: 'id,id+up+down,id+thick+thin,id+dark+light,id+shearl+shearr,id+up+down+thick+thin,all' },
    limit: { type: 'string', default: '0' },
    // 'log': geometric mean of the variants' probabilities; 'prob': arithmetic mean
    average: { type: 'string', default: 'log' },
  },
});
const dir = positionals[0] ?? 'models/hwr-htr-v3';
const sets = values.sets.split(',').map((set) => set.split('+'));

type Line = { data: Float32Array; width: number; height: number; white: number };
type Variant = (line: Line) => Float32Array;

function sampleAt(line: Line, x: number, y: number): number {
  if (y < 0 || y > line.height - 1 || x < 0 || x > line.width - 1) return line.white;
  const [x0, y0] = [Math.floor(x), Math.floor(y)];
  const [x1, y1] = [Math.min(line.width - 1, x0 + 1), Math.min(line.height - 1, y0 + 1)];
  const [tx, ty] = [x - x0, y - y0];
  const at = (xx: number, yy: number) => line.data[yy * line.width + xx];
  return (at(x0, y0) * (1 - tx) + at(x1, y0) * tx) * (1 - ty) + (at(x0, y1) * (1 - tx) + at(x1, y1) * tx) * ty;
}

function mapped(line: Line, source: (x: number, y: number) => [number, number]): Float32Array {
  const out = new Float32Array(line.data.length);
  for (let y = 0; y < line.height; y += 1)
    for (let x = 0; x < line.width; x += 1) {
      const [sx, sy] = source(x, y);
      out[y * line.width + x] = sampleAt(line, sx, sy);
    }
  return out;
}

/** Minimum (thicker ink: ink is dark) or maximum (thinner) over a 2 × 2 neighbourhood. */
function morphology(line: Line, pick: (a: number, b: number) => number): Float32Array {
  const out = new Float32Array(line.data.length);
  for (let y = 0; y < line.height; y += 1)
    for (let x = 0; x < line.width; x += 1) {
      let value = line.data[y * line.width + x];
      if (x + 1 < line.width) value = pick(value, line.data[y * line.width + x + 1]);
      if (y + 1 < line.height) value = pick(value, line.data[(y + 1) * line.width + x]);
      out[y * line.width + x] = value;
    }
  return out;
}

/** Gamma on the 0..1 grey value behind the normalised one. */
function gamma(line: Line, g: number, mean: number, std: number): Float32Array {
  return line.data.map((v) => {
    const grey = Math.min(1, Math.max(0, v * std + mean));
    return (grey ** g - mean) / std;
  });
}

function variants(mean: number, std: number): Record<string, Variant> {
  return {
    id: (line) => line.data.slice(),
    up: (line) => mapped(line, (x, y) => [x, y + 1]),
    down: (line) => mapped(line, (x, y) => [x, y - 1]),
    thick: (line) => morphology(line, Math.min),
    thin: (line) => morphology(line, Math.max),
    dark: (line) => gamma(line, 1.6, mean, std),
    light: (line) => gamma(line, 0.6, mean, std),
    shearl: (line) => mapped(line, (x, y) => [x + 0.15 * (y - line.height / 2), y]),
    shearr: (line) => mapped(line, (x, y) => [x - 0.15 * (y - line.height / 2), y]),
    vsquash: (line) => mapped(line, (x, y) => [x, line.height / 2 + (y - line.height / 2) / 0.88]),
  };
}

function logSoftmax(scores: Float32Array, steps: number, count: number): Float64Array {
  const out = new Float64Array(steps * count);
  for (let t = 0; t < steps; t += 1) {
    let max = -Infinity;
    for (let c = 0; c < count; c += 1) max = Math.max(max, scores[t * count + c]);
    let sum = 0;
    for (let c = 0; c < count; c += 1) sum += Math.exp(scores[t * count + c] - max);
    const log = max + Math.log(sum);
    for (let c = 0; c < count; c += 1) out[t * count + c] = scores[t * count + c] - log;
  }
  return out;
}

async function main(): Promise<void> {
  const reader = await validationReader(dir, values.dataset);
  const { rec, classes } = reader;
  const catalogue = variants(rec.mean[0], rec.std[0]);
  const needed = new Set(sets.flat().flatMap((name) => (name === 'all' ? Object.keys(catalogue) : [name])));
  const errors = new Map<string, LineErrors>();
  const add = (key: string, hypothesis: string, reference: string): void => {
    if (!errors.has(key)) errors.set(key, new LineErrors());
    errors.get(key)!.add(hypothesis, reference);
  };
  let lines = reader.lines;
  if (Number(values.limit) > 0) lines = lines.slice(0, Number(values.limit));
  for (const line of lines) {
    const base = await reader.input(line);
    const input: Line = { ...base, height: rec.inputHeight, white: (1 - rec.mean[0]) / rec.std[0] };
    const logProbabilities = new Map<string, Float64Array>();
    let steps = 0;
    let count = 0;
    for (const name of needed) {
      const output = await reader.run({ data: catalogue[name](input), width: input.width, contentWidth: input.contentWidth });
      [steps, count] = [output.steps, output.count];
      const log = logSoftmax(output.scores, steps, count);
      logProbabilities.set(name, log);
      add(`greedy, ${name}`, decodeCtc(Float32Array.from(log), 0, count, steps, classes, true).map((c) => c.text).join(''), line.text);
    }
    for (const set of sets) {
      const names = set.includes('all') ? [...needed] : set;
      const mean = new Float32Array(steps * count);
      for (const name of names) {
        const log = logProbabilities.get(name)!;
        for (let i = 0; i < mean.length; i += 1) mean[i] += (values.average === 'prob' ? Math.exp(log[i]) : log[i]) / names.length;
      }
      if (values.average === 'prob') for (let i = 0; i < mean.length; i += 1) mean[i] = Math.log(mean[i]);
      const key = set.join('+');
      add(`greedy, mean of ${key}`, decodeCtc(mean, 0, count, steps, classes, true).map((c) => c.text).join(''), line.text);
      const beam = reader.beam(line, { scores: mean, steps, count });
      add(`beam, mean of ${key}`, beam.map((c) => c.text).join(''), line.text);
    }
  }
  for (const [key, e] of errors) console.log(`${key.padEnd(48)} CER ${((100 * e.charEdits) / e.chars).toFixed(2)} %  WER ${((100 * e.wordEdits) / e.words).toFixed(2)} %`);
}

await main();
