// Two exported models on the validation lines of htr-lines, in one process and in the service's own
// code (onnxruntime-node, one thread; the decoders of src/pipeline): CER and WER per source for
// greedy decoding and beam search with the character LM (joint, and the line's language), and the
// model's milliseconds per line. The models run line by line in turn, so a machine shared with other
// jobs slows both alike and the time ratio stays fair.
//
//   node train/compare_onnx.ts models/hwr-htr-v2 models/hwr-htr-v3 [--dataset ../shared/datasets/htr-lines] [--limit N]
//
// Lines are fed as bench/ctc-beam-search.ts feeds them (the 64 px JPEG averaged to the model
// height); beam options are each manifest's languageModel settings (with its known words when it has a lexicon).
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadCharNgramFile, type CharNgramModel } from '../src/recognition/decoding/char-ngram-lm.ts';
import { beamSearchCtc } from '../src/recognition/decoding/ctc-beam-search.ts';
import { decodeCtc } from '../src/recognition/decoding/ctc-decode.ts';
import { allKnownWords, knownWordsFor } from '../src/recognition/decoding/known-words.ts';
import { loadCharacterClasses } from '../src/recognition/models/charset.ts';
import { loadModelSpec } from '../src/recognition/models/model-manifest.ts';
import { createSession, floatTensor, runModel } from '../src/recognition/models/onnx.ts';
import { lineSteps, modelInput, readTar, readValidationLines } from '../bench/lib/htr-lines.ts';
import { markdownTable, percent } from '../bench/lib/table.ts';
import { LineErrors } from '../bench/lib/text-metrics.ts';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    dataset: { type: 'string', default: path.resolve(import.meta.dirname, '../../shared/datasets/htr-lines') },
    limit: { type: 'string', default: '0' },
  },
});

const DECODERS = ['greedy', 'beam + LM (joint)', 'beam + LM (language)'] as const;

async function main(): Promise<void> {
  if (positionals.length === 0) throw new Error('usage: node train/compare_onnx.ts MODEL_DIR [MODEL_DIR ...]');
  const models = await Promise.all(
    positionals.map(async (dir) => {
      const spec = loadModelSpec(dir);
      const rec = spec.recognition;
      const lm = spec.languageModel;
      if (!lm) throw new Error(`${dir}: the manifest names no language model`);
      const lmFile = loadCharNgramFile(lm.file);
      const knownWords = knownWordsFor(lm);
      const jointWords = knownWords && allKnownWords(knownWords);
      return { dir, spec, rec, classes: loadCharacterClasses(rec), session: await createSession(rec.file, 1), lmFile, options: lm, knownWords, jointWords, ms: 0, errors: new Map<string, LineErrors>() };
    }),
  );
  const images = readTar(path.join(values.dataset, 'val-000.tar'));
  let lines = readValidationLines(values.dataset);
  const limit = Number(values.limit);
  if (limit > 0) lines = lines.slice(0, limit);
  for (const line of lines) {
    const jpeg = images.get(line.file);
    if (!jpeg) throw new Error(`${line.file} is not in val-000.tar`);
    const source = line.document.split(':')[0];
    for (const m of models) {
      const input = await modelInput(jpeg, m.rec);
      const started = performance.now();
      const output = await runModel(m.session, floatTensor(input.data, [1, 1, m.rec.inputHeight, input.width]));
      m.ms += performance.now() - started;
      const steps = lineSteps(input, output.dims[1]);
      const count = output.dims[2];
      const logits = m.rec.output === 'logits';
      const joint = m.lmFile.models.get('all') as CharNgramModel;
      const texts: Record<(typeof DECODERS)[number], string> = {
        greedy: decodeCtc(output.data, 0, count, steps, m.classes, logits).map((c) => c.text).join(''),
        'beam + LM (joint)': beamSearchCtc(output.data, 0, count, steps, m.classes, logits, joint, m.options, m.jointWords)
          .map((c) => c.text)
          .join(''),
        'beam + LM (language)': beamSearchCtc(output.data, 0, count, steps, m.classes, logits, m.lmFile.models.get(line.lang) ?? joint, m.options, m.knownWords?.get(line.lang) ?? null)
          .map((c) => c.text)
          .join(''),
      };
      for (const decoder of DECODERS) {
        for (const key of [`${decoder}|all`, `${decoder}|${source}`]) {
          if (!m.errors.has(key)) m.errors.set(key, new LineErrors());
          m.errors.get(key)!.add(texts[decoder], line.text);
        }
      }
    }
  }
  const sources = ['all', ...[...new Set(lines.map((l) => l.document.split(':')[0]))].sort()];
  const counts = new Map(sources.map((s) => [s, s === 'all' ? lines.length : lines.filter((l) => l.document.startsWith(`${s}:`)).length]));
  console.log(`${lines.length} validation lines; model ms/line (1 thread, interleaved): ${models.map((m) => `${m.spec.name} ${m.spec.version} ${(m.ms / lines.length).toFixed(1)}`).join(', ')}`);
  for (const m of models) console.log(`${m.dir}: beam options ${JSON.stringify(m.options)}`);
  const header = ['source', 'lines'];
  for (const decoder of DECODERS) for (const m of models) header.push(`CER ${decoder} v${m.spec.version}`, `WER ${decoder} v${m.spec.version}`);
  const rows = sources.map((s) => {
    const row = [s, String(counts.get(s))];
    for (const decoder of DECODERS)
      for (const m of models) {
        const e = m.errors.get(`${decoder}|${s}`)!;
        row.push(percent(e.charEdits / e.chars), percent(e.wordEdits / e.words));
      }
    return row;
  });
  console.log(markdownTable(header, rows));
}

await main();
