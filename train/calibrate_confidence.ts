// What a character's confidence means, measured, and the map that makes it mean what it says: the
// model reads the validation lines of htr-lines in the service's code, each reading (greedy, and the
// manifest's beam search with each line's language model) is aligned with the reference, and every
// character but spaces gives a pair (its confidence, whether it is right). On the "tune" half of the
// documents (even positions in sorted order, as tune_decoder.ts) the share right is fitted as a
// non-decreasing function of the confidence (pool-adjacent-violators over equal-count bins); on the
// other half the calibration error (ECE: the gap between mean confidence and share right, weighted
// over ten equal-width bins) is reported before and after the map. Prints the manifest's
// `recognition.confidenceCalibration` (docs/recognition.md, "Confidence").
//
//   node train/calibrate_confidence.ts [MODEL_DIR] [--bins 12] [--dataset DIR] [--write]
//
// --write puts the map into MODEL_DIR/manifest.json (export_onnx.py writes a manifest without one:
// run this after each export).
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { decodeCtc, type DecodedCharacter } from '../src/recognition/decoding/ctc-decode.ts';
import { calibrateConfidence, type CalibrationPoints } from '../src/recognition/models/confidence-calibration.ts';
import { ConfidenceBins, rightCharacters } from '../bench/lib/text-metrics.ts';
import { tuneDocuments, validationReader } from '../bench/lib/validation-reader.ts';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    dataset: { type: 'string', default: path.resolve(import.meta.dirname, '../../shared/datasets/htr-lines') },
    bins: { type: 'string', default: '12' },
    write: { type: 'boolean', default: false },
  },
});
const dir = positionals[0] ?? 'models/hwr-htr-v3';

type Judged = { confidence: number; right: boolean };

function judge(characters: readonly DecodedCharacter[], reference: string): Judged[] {
  const right = rightCharacters([...reference], characters.map((c) => c.text));
  return characters.flatMap((c, index) => (c.text === ' ' ? [] : [{ confidence: c.confidence, right: right[index] }]));
}

/** Equal-count bins of the pairs by confidence, merged until the share right never falls (PAV): the map's points. */
function fit(pairs: readonly Judged[], bins: number): CalibrationPoints {
  const sorted = [...pairs].sort((a, b) => a.confidence - b.confidence);
  let blocks = Array.from({ length: bins }, (_, b) => sorted.slice(Math.floor((b * sorted.length) / bins), Math.floor(((b + 1) * sorted.length) / bins)))
    .filter((block) => block.length > 0)
    .map((block) => ({ count: block.length, confidence: block.reduce((s, p) => s + p.confidence, 0), right: block.filter((p) => p.right).length }));
  for (let merged = true; merged; ) {
    merged = false;
    for (let b = 0; b + 1 < blocks.length; b += 1) {
      if (blocks[b].right / blocks[b].count > blocks[b + 1].right / blocks[b + 1].count) {
        const [x, y] = [blocks[b], blocks[b + 1]];
        blocks = [...blocks.slice(0, b), { count: x.count + y.count, confidence: x.confidence + y.confidence, right: x.right + y.right }, ...blocks.slice(b + 2)];
        merged = true;
        break;
      }
    }
  }
  return blocks.map((block) => [round(block.confidence / block.count), round(block.right / block.count)]);
}

const round = (value: number): number => Math.round(value * 1e4) / 1e4;

/** ECE over ten equal-width bins of the (mapped) confidence, and the mean confidence against the share right. */
function calibrationError(pairs: readonly Judged[], map: (confidence: number) => number): ConfidenceBins {
  const bins = new ConfidenceBins();
  for (const pair of pairs) bins.add(map(pair.confidence), pair.right ? 1 : 0);
  return bins;
}

async function main(): Promise<void> {
  const reader = await validationReader(dir, values.dataset);
  const tuneHalf = tuneDocuments(reader.lines);
  const pairs = { greedy: { tune: [] as Judged[], test: [] as Judged[] }, beam: { tune: [] as Judged[], test: [] as Judged[] } };
  for (const line of reader.lines) {
    const read = await reader.run(await reader.input(line));
    const half = tuneHalf.has(line.document) ? 'tune' : 'test';
    pairs.greedy[half].push(...judge(decodeCtc(read.scores, 0, read.count, read.steps, reader.classes, reader.rec.output === 'logits'), line.text));
    pairs.beam[half].push(...judge(reader.beam(line, read), line.text));
  }
  const calibration: Record<string, CalibrationPoints> = {};
  for (const decoder of ['greedy', 'beam'] as const) {
    const points = fit(pairs[decoder].tune, Number(values.bins));
    calibration[decoder] = points;
    const figures = (map: (confidence: number) => number) => {
      const f = calibrationError(pairs[decoder].test, map);
      return `ECE ${f.ece.toFixed(3)}, mean confidence ${f.meanConfidence.toFixed(3)} against ${f.shareRight.toFixed(3)} right`;
    };
    console.log(`${decoder}: ${pairs[decoder].tune.length} characters fitted (tune half), ${pairs[decoder].test.length} held out`);
    console.log(`  held out, as the model says: ${figures((c) => c)}`);
    console.log(`  held out, calibrated:        ${figures((c) => calibrateConfidence(c, points))}`);
  }
  console.log(JSON.stringify({ confidenceCalibration: calibration }));
  if (values.write) {
    const file = path.join(dir, 'manifest.json');
    const manifest = JSON.parse(readFileSync(file, 'utf8'));
    manifest.recognition.confidenceCalibration = calibration;
    // one [confidence, share right] pair per line would make the map 90 lines long
    const text = JSON.stringify(manifest, null, 2).replace(/\[\s+(-?[\d.e-]+),\s+(-?[\d.e-]+)\s+\]/g, '[$1, $2]');
    writeFileSync(file, `${text}\n`);
    console.log(`${file}: recognition.confidenceCalibration written`);
  }
}

await main();
