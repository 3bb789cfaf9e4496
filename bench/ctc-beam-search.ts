// Greedy CTC decoding against beam search with the character LM, in the service's own code
// (onnxruntime-node, src/recognition/decoding/ctc-beam-search.ts), on the validation lines of htr-lines:
// CER, WER and milliseconds per line for the model and for each decoder.
//
//   node bench/ctc-beam-search.ts [--model models/hwr-htr-v2] [--dataset ../shared/datasets/htr-lines] [--limit N]
//
// Lines are fed exactly as in training (train/batches.py): the 64 px grey JPEG averaged 2x2 to
// 32 px, normalised with the manifest's mean/std. The reference is the `text_norm` column.
// Needs ../shared (CI has it).
import path from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_BEAM_SEARCH } from '../src/recognition/models/beam-search-options.ts';
import { loadCharNgramFile, type CharNgramModel } from '../src/recognition/decoding/char-ngram-lm.ts';
import { beamSearchCtc } from '../src/recognition/decoding/ctc-beam-search.ts';
import { decodeCtc } from '../src/recognition/decoding/ctc-decode.ts';
import { loadCharacterClasses } from '../src/recognition/models/charset.ts';
import { loadModelSpec } from '../src/recognition/models/model-manifest.ts';
import { createSession, floatTensor, runModel } from '../src/recognition/models/onnx.ts';
import { lineSteps, modelInput, readTar, readValidationLines } from './lib/htr-lines.ts';
import { markdownTable, percent } from './lib/table.ts';
import { LineErrors } from './lib/text-metrics.ts';

const { values } = parseArgs({
  options: {
    model: { type: 'string', default: 'models/hwr-htr-v2' },
    dataset: { type: 'string', default: '../shared/datasets/htr-lines' },
    limit: { type: 'string', default: '0' },
  },
});

async function main(): Promise<void> {
  const spec = loadModelSpec(values.model);
  const rec = spec.recognition;
  const classes = loadCharacterClasses(rec);
  const session = await createSession(rec.file, 1);
  if (!spec.languageModel) throw new Error(`${values.model}: the manifest names no language model`);
  const lmFile = loadCharNgramFile(spec.languageModel.file);
  const joint = lmFile.models.get('all') as CharNgramModel;
  const images = readTar(path.join(values.dataset, 'val-000.tar'));
  let lines = readValidationLines(values.dataset);
  const limit = Number(values.limit);
  if (limit > 0) lines = lines.slice(0, limit);

  const modelTime = new LineErrors();
  const decoders = {
    greedy: new LineErrors(),
    'beam, no LM': new LineErrors(),
    'beam + LM (joint)': new LineErrors(),
    'beam + LM (per language)': new LineErrors(),
  };
  for (const line of lines) {
    const jpeg = images.get(line.file);
    if (!jpeg) throw new Error(`${line.file} is not in val-000.tar`);
    const input = await modelInput(jpeg, rec);
    let started = performance.now();
    const output = await runModel(session, floatTensor(input.data, [1, 1, rec.inputHeight, input.width]));
    modelTime.ms += performance.now() - started;
    const steps = lineSteps(input, output.dims[1]);
    const count = output.dims[2];
    const logits = rec.output === 'logits';
    const run = (name: keyof typeof decoders, decode: () => { text: string }[]): void => {
      started = performance.now();
      const text = decode()
        .map((character) => character.text)
        .join('');
      decoders[name].add(text, line.text, performance.now() - started);
    };
    run('greedy', () => decodeCtc(output.data, 0, count, steps, classes, logits));
    run('beam, no LM', () => beamSearchCtc(output.data, 0, count, steps, classes, logits, null));
    run('beam + LM (joint)', () => beamSearchCtc(output.data, 0, count, steps, classes, logits, joint));
    run('beam + LM (per language)', () =>
      beamSearchCtc(output.data, 0, count, steps, classes, logits, lmFile.models.get(line.lang) ?? joint),
    );
  }
  console.log(
    `${lines.length} validation lines, model ${spec.name} ${spec.version}, model ${(modelTime.ms / lines.length).toFixed(1)} ms/line (1 thread)`,
  );
  console.log(`beam options: ${JSON.stringify(DEFAULT_BEAM_SEARCH)}`);
  console.log(
    markdownTable(
      ['decoder', 'CER', 'WER', 'ms/line'],
      Object.entries(decoders).map(([name, e]) => [
        name,
        percent(e.charEdits / e.chars),
        percent(e.wordEdits / e.words),
        (e.ms / lines.length).toFixed(2),
      ]),
    ),
  );
}

await main();
