// The beam search's weights for an exported model, chosen in the service's own code: the model reads
// the validation lines of htr-lines once (onnxruntime-node), then every alpha × beta × wordBonus of
// the grid decodes the "tune" half (validation documents of even position in sorted order, as
// train/eval_decoding.py --tune splits them) with the manifest's beam width, LM file, per-line
// language model and known words. The best setting on the tune half is reported on the other half
// ("test", never used to choose) and on all lines, per source, against the manifest's own setting.
//
//   node train/tune_decoder.ts [MODEL_DIR] [--alphas 0.4,0.5,0.6] [--betas 1,1.5,2] [--bonuses 1,2,3]
//                              [--beam N] [--prune P] [--max-candidates K]
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { BeamSearchOptions } from '../src/recognition/models/beam-search-options.ts';
import type { DatasetLine } from '../bench/lib/htr-lines.ts';
import { markdownTable } from '../bench/lib/table.ts';
import { LineErrors } from '../bench/lib/text-metrics.ts';
import { type LineScores, tuneDocuments, validationReader } from '../bench/lib/validation-reader.ts';

const numbers = (list: string): number[] => list.split(',').map(Number);
// two decimals: the settings of the grid differ by tenths of a point
const percent = (fraction: number): string => `${(100 * fraction).toFixed(2)} %`;
const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    dataset: { type: 'string', default: path.resolve(import.meta.dirname, '../../shared/datasets/htr-lines') },
    alphas: { type: 'string', default: '0.4,0.5,0.6,0.7' },
    betas: { type: 'string', default: '1,1.5,2,2.5' },
    bonuses: { type: 'string', default: '1,2,3' },
    beam: { type: 'string' },
    prune: { type: 'string' },
    'max-candidates': { type: 'string' },
  },
});
const dir = positionals[0] ?? 'models/hwr-htr-v3';

interface ReadLine {
  line: DatasetLine;
  scores: LineScores;
}

async function readLines(): Promise<{ reads: ReadLine[]; decode: (read: ReadLine, options: BeamSearchOptions) => string; shipped: BeamSearchOptions }> {
  const reader = await validationReader(dir, values.dataset);
  const reads: ReadLine[] = [];
  for (const line of reader.lines) reads.push({ line, scores: await reader.run(await reader.input(line)) });
  const decode = (read: ReadLine, options: BeamSearchOptions): string =>
    reader
      .beam(read.line, read.scores, options)
      .map((c) => c.text)
      .join('');
  return { reads, decode, shipped: reader.lm };
}

function errorsOf(reads: readonly ReadLine[], decode: (read: ReadLine) => string): LineErrors {
  const errors = new LineErrors();
  for (const read of reads) errors.add(decode(read), read.line.text);
  return errors;
}

async function main(): Promise<void> {
  const { reads, decode, shipped } = await readLines();
  const tuneHalf = tuneDocuments(reads.map((read) => read.line));
  const tune = reads.filter((read) => tuneHalf.has(read.line.document));
  const test = reads.filter((read) => !tuneHalf.has(read.line.document));
  const beam = values.beam ? Number(values.beam) : shipped.beam;
  const prune = values.prune ? Number(values.prune) : shipped.prune;
  const maxCandidates = values['max-candidates'] ? Number(values['max-candidates']) : shipped.maxCandidates;
  console.log(`${dir}: ${reads.length} lines (tune ${tune.length}, test ${test.length}), beam ${beam}, prune ${prune}, at most ${maxCandidates} classes a frame; shipped ${JSON.stringify(shipped)}`);

  let best: { options: BeamSearchOptions; cer: number } | null = null;
  for (const alpha of numbers(values.alphas))
    for (const beta of numbers(values.betas))
      for (const wordBonus of numbers(values.bonuses)) {
        const options = { ...shipped, beam, prune, maxCandidates, alpha, beta, wordBonus };
        const errors = errorsOf(tune, (read) => decode(read, options));
        const cer = errors.charEdits / errors.chars;
        console.log(`tune alpha ${alpha} beta ${beta} bonus ${wordBonus}: CER ${percent(cer)} WER ${percent(errors.wordEdits / errors.words)}`);
        if (!best || cer < best.cer) best = { options, cer };
      }
  const chosen = best!.options;
  console.log(`chosen on the tune half: alpha ${chosen.alpha}, beta ${chosen.beta}, wordBonus ${chosen.wordBonus}`);

  const sources = [...new Set(reads.map((read) => read.line.document.split(':')[0]))].sort();
  const subsets: [string, ReadLine[]][] = [
    ['all', reads],
    ['tune half', tune],
    ['test half', test],
    ...sources.map((source): [string, ReadLine[]] => [source, reads.filter((read) => read.line.document.startsWith(`${source}:`))]),
    ...sources.map((source): [string, ReadLine[]] => [`${source} (test half)`, test.filter((read) => read.line.document.startsWith(`${source}:`))]),
  ];
  const rows = subsets
    .filter(([, subset]) => subset.length > 0)
    .map(([name, subset]) => {
      const before = errorsOf(subset, (read) => decode(read, shipped));
      const after = errorsOf(subset, (read) => decode(read, chosen));
      return [
        name,
        String(subset.length),
        percent(before.charEdits / before.chars),
        percent(before.wordEdits / before.words),
        percent(after.charEdits / after.chars),
        percent(after.wordEdits / after.words),
      ];
    });
  console.log(markdownTable(['lines', 'count', 'CER shipped', 'WER shipped', 'CER chosen', 'WER chosen'], rows));
}

await main();
