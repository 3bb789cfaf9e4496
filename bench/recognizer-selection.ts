// Measures the rule that shares a page's lines between the main (handwriting) recognizer and
// the screening one (PP-OCRv4), src/recognition/reading/select-reading.ts, on lines other
// than the fixture pages' handwriting:
//   - handwritten: the validation pages of ../shared/datasets/htr-lines (documents not trained
//     on), every line as the dataset cut it (line box + 10 % margin), grouped by page;
//   - printed: the typewritten/printed lines among them (Stanford letters), and the lines of the
//     printed fixture pages cut from their ground-truth polygons the same way (the only printed
//     pages we have: reported apart, as are the handwritten fixture pages' lines).
// Both recognizers read every line (the main one greedy and with beam search); then each
// candidate rule (keepAbove x margin x probe size) is applied page by page and scored: CER per
// set and the share of lines each recognizer has to read (the cost).
//
//   node bench/recognizer-selection.ts [--model DIR] [--dataset DIR] [--pages DIR] [--every N] [--json FILE] [--from-json FILE]
//
// --model: a model directory with a screening recognizer (default: MODEL_DIR, else models/default).
// --every N: every Nth validation page only. --from-json: score lines measured before.
// Needs ../shared (CI has it).
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import sharp from 'sharp';
import { prepareImageFile } from '../src/recognition/image/prepare-image.ts';
import type { RgbImage } from '../src/recognition/image/raster.ts';
import type { RotatedRect } from '../src/recognition/page/geometry.ts';
import { boundingBox } from '../src/recognition/page/geometry.ts';
import { DEFAULT_MODEL_DIR } from '../src/recognition/models/default-model.ts';
import { loadModelSpec } from '../src/recognition/models/model-manifest.ts';
import type { RecognitionSpec, SelectionSpec } from '../src/recognition/models/model-spec.ts';
import { allLines } from '../src/recognition/page/page-result.ts';
import { LineRecognizer, type DecoderChoice } from '../src/recognition/reading/line-recognizer.ts';
import {
  lineConfidence,
  mainReadingIsNoise,
  pageLooksPrinted,
  probeLines,
  probeSurelyPrinted,
  screeningReadsProbeBetter,
  screeningSuffices,
  screeningWins,
} from '../src/recognition/reading/select-reading.ts';
import type { ModelGate } from '../src/recognition/reading/text-recognizer.ts';
import { pageResultFromGroundTruth } from '../test/support/page-result-from-ground-truth.ts';
import { DEFAULT_PAGES_DIR, listFixturePages } from './lib/fixture-pages.ts';
import { DEFAULT_DATASET_DIR, readTar, readValidationLines } from './lib/htr-lines.ts';
import { markdownTable, percent } from './lib/table.ts';
import { characterErrors, errorRate, normaliseText } from './lib/text-metrics.ts';

const { values } = parseArgs({
  options: {
    model: { type: 'string', default: process.env.MODEL_DIR ?? DEFAULT_MODEL_DIR },
    dataset: { type: 'string', default: DEFAULT_DATASET_DIR },
    pages: { type: 'string', default: DEFAULT_PAGES_DIR },
    every: { type: 'string', default: '1' },
    json: { type: 'string' },
    'from-json': { type: 'string' },
  },
});

type LineSet = 'val handwritten' | 'val printed' | 'fixture printed' | 'fixture handwritten';

interface Reading {
  text: string;
  confidence: number;
}

export interface MeasuredLine {
  set: LineSet;
  /** The page the line comes from (whole validation pages are read, for page-level rules). */
  page: string;
  /** Width / height of the crop (which lines are the widest of the page: the probe). */
  aspect: number;
  reference: string;
  mainGreedy: Reading;
  mainBeam: Reading;
  screening: Reading;
}

interface Sample {
  set: LineSet;
  page: string;
  reference: string;
  image: RgbImage;
  rect: RotatedRect;
}

const gate: ModelGate = (task) => task();

async function main(): Promise<void> {
  const spec = loadModelSpec(values.model);
  if (!spec.screening) throw new Error(`${values.model} names no screening recognizer`);
  const configured: Rule = {
    keepAbove: spec.screening.keepAbove,
    margin: spec.screening.margin,
    probeLines: spec.screening.probeLines,
    dropBelow: spec.screening.dropBelow,
    sureMargin: spec.screening.sureMargin,
    printedAbove: spec.screening.printedAbove,
  };
  if (values['from-json']) {
    report(JSON.parse(await readFile(values['from-json'], 'utf8')) as MeasuredLine[], configured, null);
    return;
  }
  const load = (
    recognition: RecognitionSpec,
    source: { name: string; version: string },
    decoder: DecoderChoice,
    languageModel = spec.languageModel,
  ) => LineRecognizer.load({ source, recognition, languageModel, decoder, threads: 2 });
  const greedy = await load(spec.recognition, spec.recognitionSource, 'greedy');
  const beam = await load(spec.recognition, spec.recognitionSource, 'beam');
  const screening = await load(spec.screening.recognition, spec.screening.source, 'greedy', spec.screening.languageModel);
  console.log(
    `# recognizer selection: ${spec.recognitionSource.name} ${spec.recognitionSource.version} (decoders: greedy, ${beam.decoder}) and ${spec.screening.source.name}`,
  );

  const every = Math.max(1, Number(values.every) || 1);
  const measured: MeasuredLine[] = [];
  const ms = { greedy: 0, beam: 0, screening: 0 };
  const measure = async (sample: Sample): Promise<void> => {
    const run = async (recognizer: LineRecognizer, key: keyof typeof ms): Promise<Reading> => {
      const started = performance.now();
      const [read] = await recognizer.read(sample.image, [sample.rect], gate);
      ms[key] += performance.now() - started;
      return { text: read.characters.map((character) => character.text).join(''), confidence: lineConfidence([read.characters]) };
    };
    measured.push({
      set: sample.set,
      page: sample.page,
      aspect: sample.rect.width / sample.rect.height,
      reference: sample.reference,
      mainGreedy: await run(greedy, 'greedy'),
      mainBeam: await run(beam, 'beam'),
      screening: await run(screening, 'screening'),
    });
  };

  const images = readTar(path.join(values.dataset, 'val-000.tar'));
  const all = readValidationLines(values.dataset);
  const pages = [...new Set(all.map((line) => line.page))].filter((_, index) => index % every === 0);
  const lines = all.filter((line) => pages.includes(line.page));
  for (const line of lines) {
    const jpeg = images.get(line.file);
    if (!jpeg) throw new Error(`${line.file} is not in val-000.tar`);
    const { data, info } = await sharp(jpeg).removeAlpha().toColourspace('srgb').raw().toBuffer({ resolveWithObject: true });
    if (info.channels !== 3) throw new Error(`${line.file}: ${info.channels} channels after conversion`);
    const image: RgbImage = { data: new Uint8Array(data.buffer, data.byteOffset, data.length), width: info.width, height: info.height };
    const rect = { cx: info.width / 2, cy: info.height / 2, width: info.width, height: info.height, angle: 0 };
    await measure({ set: line.kind === 'printed' ? 'val printed' : 'val handwritten', page: line.page, reference: line.text, image, rect });
  }
  process.stderr.write(`  ${lines.length} validation lines of ${pages.length} pages read\n`);

  for (const page of listFixturePages(values.pages)) {
    const prepared = await prepareImageFile(page.imagePath, { name: page.name, maxPixels: 200e6 });
    const truth = allLines(await pageResultFromGroundTruth({ imagePath: page.imagePath, xmlPath: page.xmlPath }));
    for (const line of truth) {
      const reference = normaliseText(line.text);
      if (reference === '') continue;
      await measure({
        set: page.kind === 'printed' ? 'fixture printed' : 'fixture handwritten',
        page: page.name,
        reference,
        image: prepared.raster,
        rect: lineRect(line.polygon),
      });
    }
    process.stderr.write(`  ${page.name}: ${truth.length} ground-truth lines read\n`);
  }
  await Promise.all([greedy.close(), beam.close(), screening.close()]);

  report(measured, configured, {
    greedy: ms.greedy / measured.length,
    beam: ms.beam / measured.length,
    screening: ms.screening / measured.length,
  });
  if (values.json) await writeFile(values.json, JSON.stringify(measured));
}

/** The dataset's crop: bounding box + 10 % of the line height above and below, half that left and right. */
function lineRect(polygon: readonly (readonly [number, number])[]): RotatedRect {
  const box = boundingBox(polygon as [number, number][]);
  const margin = Math.max(2, box.height * 0.1);
  return { cx: box.x + box.width / 2, cy: box.y + box.height / 2, width: box.width + margin, height: box.height + 2 * margin, angle: 0 };
}

const SETS: LineSet[] = ['val handwritten', 'val printed', 'fixture printed', 'fixture handwritten'];

type Rule = Pick<SelectionSpec, 'keepAbove' | 'margin' | 'probeLines' | 'dropBelow' | 'sureMargin' | 'printedAbove'>;
type Decoder = 'mainGreedy' | 'mainBeam';

/** The engine's rule (ocr-engine.ts) applied to one page's measured lines: the reading each line keeps, and who read what. */
function applyRule(page: readonly MeasuredLine[], rule: Rule, decoder: Decoder): { kept: Reading[]; screened: number; mainRead: number } {
  const probe = new Set(
    probeLines(
      page.map((line) => line.aspect),
      rule.probeLines,
    ),
  );
  const probed = page.filter((_, index) => probe.has(index));
  const screeningProbe = probed.map((line) => [placed(line.screening)]);
  const printed =
    pageLooksPrinted(screeningProbe, rule) &&
    (probeSurelyPrinted(screeningProbe, rule) ||
      screeningReadsProbeBetter(
        screeningProbe,
        probed.map((line) => [placed(line[decoder])]),
        rule,
      ));
  let screened = 0;
  let mainRead = 0;
  const kept = page.map((line, index) => {
    const screenedLine = printed || probe.has(index);
    if (screenedLine) screened += 1;
    if (screenedLine && screeningSuffices(line.screening.confidence, printed, rule)) return line.screening;
    mainRead += 1;
    if (screenedLine && screeningWins(line.screening.confidence, line[decoder].confidence, rule)) return line.screening;
    if (mainReadingIsNoise(line[decoder].confidence, rule)) return screenedLine ? line.screening : { text: '', confidence: 0 };
    return line[decoder];
  });
  return { kept, screened, mainRead };
}

/** A reading as one character carrying the line's mean confidence (what pageLooksPrinted averages, up to character weighting). */
function placed(reading: Reading): { text: string; start: number; end: number; confidence: number }[] {
  return [...reading.text.replace(/\s/g, '')].map(() => ({ text: 'x', start: 0, end: 1, confidence: reading.confidence }));
}

function report(lines: readonly MeasuredLine[], configured: Rule, msPerLine: Record<string, number> | null): void {
  const bySet = SETS.map((set) => [set, lines.filter((line) => line.set === set)] as const).filter(([, group]) => group.length > 0);
  const cerOf = (group: readonly MeasuredLine[], texts: readonly string[]): number => {
    let errorsSum = 0;
    let length = 0;
    group.forEach((line, index) => {
      const count = characterErrors(normaliseText(texts[index]), line.reference);
      errorsSum += count.errors;
      length += count.length;
    });
    return errorRate({ errors: errorsSum, length });
  };
  console.log(`\n${lines.length} lines, ${new Set(lines.map((line) => line.page)).size} pages`);
  if (msPerLine)
    console.log(
      `ms per line (one line per model run): main greedy ${msPerLine.greedy.toFixed(1)}, main beam ${msPerLine.beam.toFixed(1)}, screening ${msPerLine.screening.toFixed(1)}`,
    );
  console.log('');
  const single: [string, (line: MeasuredLine) => Reading][] = [
    ['main, greedy', (line) => line.mainGreedy],
    ['main, beam', (line) => line.mainBeam],
    ['screening (PP-OCRv4)', (line) => line.screening],
  ];
  console.log(
    markdownTable(
      ['recognizer alone', ...bySet.map(([set, group]) => `CER ${set} (${group.length})`), ...bySet.map(([set]) => `mean conf. ${set}`)],
      single.map(([name, pick]) => [
        name,
        ...bySet.map(([, group]) =>
          percent(
            cerOf(
              group,
              group.map((line) => pick(line).text),
            ),
          ),
        ),
        ...bySet.map(([, group]) => (group.reduce((sum, line) => sum + pick(line).confidence, 0) / group.length).toFixed(3)),
      ]),
    ),
  );

  const rules: Rule[] = [configured];
  for (const keepAbove of [0.7, 0.75, 0.8, 0.85, 0.9])
    for (const margin of [0.1, 0.2, 0.3, 1])
      for (const probe of [3, 6, 1000])
        rules.push({
          keepAbove,
          margin,
          probeLines: probe,
          dropBelow: configured.dropBelow,
          sureMargin: configured.sureMargin,
          printedAbove: configured.printedAbove,
        });
  const pages = [...new Set(lines.map((line) => line.page))].map((page) => lines.filter((line) => line.page === page));
  const rows = rules.map((rule, index) => {
    const row = [
      `${rule.keepAbove} / ${rule.margin} / ${rule.probeLines}${index === 0 ? ` (manifest, sureMargin ${rule.sureMargin}, printedAbove ${rule.printedAbove})` : ''}`,
    ];
    let screened = 0;
    let mainRead = 0;
    for (const decoder of ['mainGreedy', 'mainBeam'] as const) {
      const kept = new Map<MeasuredLine, Reading>();
      for (const page of pages) {
        const result = applyRule(page, rule, decoder);
        page.forEach((line, lineIndex) => kept.set(line, result.kept[lineIndex]));
        if (decoder === 'mainBeam') {
          screened += result.screened;
          mainRead += result.mainRead;
        }
      }
      for (const [, group] of bySet)
        row.push(
          percent(
            cerOf(
              group,
              group.map((line) => (kept.get(line) as Reading).text),
            ),
          ),
        );
    }
    row.push(percent(screened / lines.length), percent(mainRead / lines.length));
    return row;
  });
  console.log('');
  console.log(
    markdownTable(
      [
        'rule: keepAbove / margin / probeLines',
        ...bySet.map(([set]) => `greedy: ${set}`),
        ...bySet.map(([set]) => `beam: ${set}`),
        'lines screened',
        'lines read by main',
      ],
      rows,
    ),
  );
}

if (import.meta.main) await main();
