// `npm run bench:correction-guards`: the correction step's line guards measured on the val pages of
// ../shared/datasets/htr-pages (ground truth known), against stand-in correction models that
// speak the real OpenAI and Gemini wire formats (bench/lib/stand-in-correctors.ts: perfect, noisy,
// modernising, completing, shifting, hallucinating, truncating).
//
//  1. The pages are read once by the configured setup and kept with each line's output frames
//     (bench/lib/recognised-pages.ts; --cache DIR, default /tmp/hwr-correction-guards).
//  2. The documents are split in two halves (alternately in dataset order): the evidence guard's
//     thresholds are chosen on the tune half, line by line (each line's errors against the ground
//     truth aligned under it, bench/lib/aligned-truth.ts): the most gain of the perfect and noisy
//     stand-ins such that no misbehaving stand-in makes the tune half worse in total, nor any page
//     worse by more than --page-margin CER points (default 0.5).
//  3. Each behaviour corrects every page through the real corrector (LlmCorrector, the openai
//     provider against the stand-in server; the evidence guard again through the gemini provider):
//     without guards, with the edit-ratio guard (before, CORRECTION_MAX_EDIT_RATIO 0.3) and with
//     the evidence guard (after); page CER and WER (bench/lib/text-metrics.ts), lines changed and
//     refused, the worst page; reported for the held-out half (and, for reference, the tune half).
//  4. The guard's cost: the CTC forward passes per page and their time.
//
//   node bench/correction-guards.ts [--dataset DIR] [--cache DIR] [--page-margin 0.5] [--out FILE.md]
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { FilesystemBlobStore } from '../src/blobs/filesystem-blob-store.ts';
import { storedPageImage } from '../src/pipeline/stored-page-image.ts';
import { createLogger } from '../src/platform/logger.ts';
import { createProvider } from '../src/recognition/correction/create-corrector.ts';
import { normalizeLineText } from '../src/recognition/correction/guards.ts';
import {
  allowedLoss,
  checkLineEvidence,
  droppedCharacters,
  type EvidenceGuardSettings,
  lineEvidence,
} from '../src/recognition/correction/line-evidence.ts';
import { LlmCorrector } from '../src/recognition/correction/llm-corrector.ts';
import { evidenceGuard, type CorrectionSettings, type LineGuardSettings } from '../src/recognition/correction/settings.ts';
import { editDistance as lineEditDistance, editRatio } from '../src/recognition/correction/edit-distance.ts';
import { allLines, type PageResult } from '../src/recognition/page/page-result.ts';
import { FakeLlmServer } from '../test/support/fake-llm-server.ts';
import { alignedTruth } from './lib/aligned-truth.ts';
import { DEFAULT_HTR_PAGES, pagesFromDataset } from './lib/htr-pages.ts';
import { type RecognisedPage, recognisedPages } from './lib/recognised-pages.ts';
import { BEHAVIOURS, type Behaviour, MISBEHAVIOURS, standInAnswer, standInHandler, type StandInPage } from './lib/stand-in-correctors.ts';
import { markdownTable } from './lib/table.ts';
import { characterErrors, normaliseText, scorePage } from './lib/text-metrics.ts';

const { values } = parseArgs({
  options: {
    dataset: { type: 'string', default: DEFAULT_HTR_PAGES },
    cache: { type: 'string', default: '/tmp/hwr-correction-guards' },
    'page-margin': { type: 'string', default: '0.5' },
    out: { type: 'string' },
  },
});
const pageMargin = Number(values['page-margin']) / 100;
const progress = (message: string): void => void process.stderr.write(`${message}\n`);

const pages = await recognisedPages(
  pagesFromDataset(values.dataset, 'val', path.join(values.cache, 'images')),
  path.join(values.cache, `read-${process.env.RECOGNITION_DECODER ?? 'beam'}`),
  progress,
);
const documents = [...new Set(pages.map((page) => page.document))];
const tuneDocuments = new Set(documents.filter((_, index) => index % 2 === 0));
const tune = pages.filter((page) => tuneDocuments.has(page.document));
const heldOut = pages.filter((page) => !tuneDocuments.has(page.document));

function standInPage(page: RecognisedPage): StandInPage {
  return {
    groundTruth: page.groundTruth,
    otherText: pages
      .filter((other) => other.document !== page.document)
      .flatMap((other) => other.groundTruth.map(normaliseText).filter((line) => line.length >= 10)),
  };
}

// ---- 2. the thresholds, chosen line by line on the tune half ----

interface LineCase {
  page: string;
  behaviour: Behaviour;
  confidence: number;
  /** null: the line has no frames (judged by the edit ratio). */
  lossPerChar: number | null;
  lossPerEdit: number;
  /** Recognised characters in a row the correction leaves to blanks (droppedCharacters). */
  droppedRun: number;
  editRatio: number;
  editDistance: number;
  /** Errors against the aligned ground truth: corrected less recognised (negative: the correction helps). */
  delta: number;
}

function lineCases(page: RecognisedPage): LineCase[] {
  const lines = allLines(page.page);
  const truth = alignedTruth(
    lines.map((line) => line.text),
    page.groundTruth,
  );
  const cases: LineCase[] = [];
  for (const behaviour of BEHAVIOURS) {
    const answer = standInAnswer(
      behaviour,
      lines.map((line) => ({ id: line.id, text: line.text })),
      standInPage(page),
    );
    lines.forEach((line, index) => {
      const corrected = normalizeLineText(answer[index].text);
      if (corrected === normalizeLineText(line.text)) return;
      const frames = page.lineFrames.get(line.id);
      const evidence = frames ? lineEvidence(frames, line.text, corrected) : null;
      const errors = (text: string): number => characterErrors(normaliseText(text), truth[index]).errors;
      cases.push({
        page: page.name,
        behaviour,
        confidence: line.confidence,
        lossPerChar: evidence && evidence.unknown * 3 <= evidence.characters ? evidence.lossPerChar : null,
        lossPerEdit: evidence?.lossPerEdit ?? 0,
        droppedRun: frames ? droppedCharacters(frames, line.text, corrected).longestRun : 0,
        editRatio: editRatio(line.text, corrected),
        editDistance: lineEditDistance(line.text, corrected),
        delta: errors(corrected) - errors(line.text),
      });
    });
  }
  return cases;
}

function accepts(line: LineCase, settings: EvidenceGuardSettings): boolean {
  if (line.lossPerChar !== null)
    return (
      line.lossPerChar <= allowedLoss(line.confidence, settings) &&
      line.lossPerEdit <= settings.maxLossPerEdit &&
      line.droppedRun <= settings.maxDroppedRun
    );
  return line.editDistance <= 1 || line.editRatio <= settings.framelessMaxEditRatio;
}

const referenceChars = new Map(pages.map((page) => [page.name, Array.from(scoringReference(page.groundTruth)).length] as const));

function scoringReference(lines: readonly string[]): string {
  return lines
    .map(normaliseText)
    .filter((line) => line !== '')
    .join(' ');
}

interface Choice {
  settings: EvidenceGuardSettings;
  gain: number;
  perfectGain: number;
  noisyGain: number;
}

/**
 * The most recognised characters in a row a correction may leave unexplained: the grid's values
 * (Infinity: the check off, as the first evidence guard had it).
 */
const DROPPED_RUNS = [1, 2, 3, 4, 5, 6, 8, Number.POSITIVE_INFINITY];

function chooseThresholds(cases: readonly LineCase[]): { choice: Choice; tried: number } {
  let best: Choice | null = null;
  let tried = 0;
  for (let maxLossPerChar = 0; maxLossPerChar <= 4.001; maxLossPerChar += 0.125)
    for (const confidenceSlack of [0, 0.5, 1, 1.5, 2, 3, 4, 5, 6, 8])
      for (const framelessMaxEditRatio of [0, 0.05, 0.1, 0.15, 0.2, 0.3])
        for (const maxLossPerEdit of [2, 3, 4, 5, 6, 8, Number.POSITIVE_INFINITY])
          for (const maxDroppedRun of DROPPED_RUNS) {
            tried += 1;
            const settings = { maxLossPerChar, confidenceSlack, maxLossPerEdit, framelessMaxEditRatio, maxDroppedRun };
            const perPage = new Map<string, number>();
            const total = new Map<Behaviour, number>();
            for (const line of cases) {
              if (!accepts(line, settings)) continue;
              total.set(line.behaviour, (total.get(line.behaviour) ?? 0) + line.delta);
              if (MISBEHAVIOURS.includes(line.behaviour)) {
                const key = `${line.behaviour}\u0000${line.page}`;
                perPage.set(key, (perPage.get(key) ?? 0) + line.delta);
              }
            }
            const safe =
              MISBEHAVIOURS.every((behaviour) => (total.get(behaviour) ?? 0) <= 0) &&
              [...perPage].every(([key, delta]) => delta <= pageMargin * (referenceChars.get(key.split('\u0000')[1]) ?? 0));
            if (!safe) continue;
            const perfectGain = -(total.get('perfect') ?? 0);
            const noisyGain = -(total.get('noisy') ?? 0);
            const gain = perfectGain + noisyGain;
            if (best === null || gain > best.gain) best = { settings, gain, perfectGain, noisyGain };
          }
  if (best === null) throw new Error('no threshold keeps every misbehaving stand-in out on the tune half');
  return { choice: best, tried };
}

const tuneCases = tune.flatMap(lineCases);
const { choice, tried } = chooseThresholds(tuneCases);
const chosen = choice.settings;
progress(
  `chosen on the tune half (${tune.length} pages, ${tried} settings tried): ${JSON.stringify(chosen)}; perfect gain ${choice.perfectGain}, noisy ${choice.noisyGain} characters`,
);

// ---- 3. every behaviour through the real corrector ----

const server = await FakeLlmServer.start();
let current: StandInPage = { groundTruth: [], otherText: [] };
const log = createLogger('silent');

function corrector(api: 'openai' | 'gemini', lineGuard: LineGuardSettings, maxEditRatio: number): LlmCorrector {
  const settings: CorrectionSettings = {
    provider: api,
    geminiApiKey: api === 'gemini' ? 'stand-in' : null,
    geminiBaseUrl: server.geminiBaseUrl,
    openaiBaseUrl: api === 'openai' ? server.openaiBaseUrl : null,
    openaiApiKey: null,
    models: {
      gemini: { cheap: 'stand-in', balanced: 'stand-in', best: 'stand-in' },
      openai: { cheap: 'stand-in', balanced: 'stand-in', best: 'stand-in' },
    },
    bestTierImage: { gemini: false, openai: false },
    maxEditRatio,
    lineGuard,
    timeoutMs: 60_000,
    retries: 0,
    retryBaseMs: 0,
    maxRetryWaitMs: 0,
  };
  const provider = createProvider(settings);
  if (!provider) throw new Error('no provider');
  return new LlmCorrector(provider, { maxEditRatio, lineGuard, timeoutMs: 60_000, retry: { retries: 0, baseDelayMs: 0, maxWaitMs: 0 } });
}

/** The evidence guard as first chosen (commit 0f8fad5): likelihood alone, no dropped-run check. */
const FIRST_EVIDENCE_GUARD: EvidenceGuardSettings = {
  maxLossPerChar: 0.25,
  confidenceSlack: 6,
  maxLossPerEdit: 6,
  framelessMaxEditRatio: 0,
  maxDroppedRun: Number.POSITIVE_INFINITY,
};

const GUARDS = {
  none: { api: 'openai', guard: { kind: 'edit-ratio' }, maxEditRatio: 1 },
  'edit ratio': { api: 'openai', guard: { kind: 'edit-ratio' }, maxEditRatio: 0.3 },
  'first evidence': { api: 'openai', guard: evidenceGuard(FIRST_EVIDENCE_GUARD), maxEditRatio: 0.3 },
  evidence: { api: 'openai', guard: evidenceGuard(chosen), maxEditRatio: 0.3 },
  'evidence, gemini': { api: 'gemini', guard: evidenceGuard(chosen), maxEditRatio: 0.3 },
} as const;
type GuardName = keyof typeof GUARDS;

interface PageOutcome {
  chars: number;
  charErrors: number;
  words: number;
  wordErrors: number;
  changed: number;
  refused: number;
}

async function correctPage(page: RecognisedPage, behaviour: Behaviour, guard: GuardName): Promise<PageResult> {
  const { api, guard: lineGuard, maxEditRatio } = GUARDS[guard];
  current = standInPage(page);
  server.handle(standInHandler(behaviour, () => current));
  return corrector(api, lineGuard, maxEditRatio).correct(page.page, {
    options: {
      llmTier: 'balanced',
      preset: 'generic',
      pipelineSteps: ['layout', 'recognition', 'correction'],
      pdfFormat: 'none',
      webhookUrl: null,
    },
    pageImage: storedPageImage(new FilesystemBlobStore(path.dirname(page.imagePath)), path.basename(page.imagePath)),
    signal: AbortSignal.timeout(60_000),
    log,
    lineFrames: page.lineFrames,
  });
}

function outcome(page: RecognisedPage, result: PageResult): PageOutcome {
  const lines = allLines(result);
  const score = scorePage(
    lines.map((line) => line.text),
    page.groundTruth,
  );
  return {
    chars: score.characters.length,
    charErrors: score.characters.errors,
    words: score.words.length,
    wordErrors: score.words.errors,
    changed: lines.filter((line) => line.recognizedText !== undefined).length,
    refused: result.correction?.refusedLines.length ?? 0,
  };
}

type Results = Map<string, PageOutcome>; // `${behaviour}|${guard}|${page}`, and `none||${page}` uncorrected
const results: Results = new Map();
for (const page of pages) results.set(`none||${page.name}`, outcome(page, page.page));
for (const behaviour of BEHAVIOURS) {
  for (const guard of Object.keys(GUARDS) as GuardName[]) {
    for (const page of pages) results.set(`${behaviour}|${guard}|${page.name}`, outcome(page, await correctPage(page, behaviour, guard)));
  }
  progress(`corrected every page with ${behaviour}`);
}
await server.close();

const sum = (outcomes: PageOutcome[], key: keyof PageOutcome): number => outcomes.reduce((total, item) => total + item[key], 0);
const rate = (errors: number, length: number): string => `${((100 * errors) / Math.max(1, length)).toFixed(1)}`;

function halfTable(half: RecognisedPage[]): string {
  const uncorrected = half.map((page) => results.get(`none||${page.name}`)!);
  const cerNone = rate(sum(uncorrected, 'charErrors'), sum(uncorrected, 'chars'));
  const werNone = rate(sum(uncorrected, 'wordErrors'), sum(uncorrected, 'words'));
  const rows = BEHAVIOURS.map((behaviour) => {
    const of = (guard: GuardName) => half.map((page) => results.get(`${behaviour}|${guard}|${page.name}`)!);
    const cell = (guard: GuardName) => {
      const outcomes = of(guard);
      return `${rate(sum(outcomes, 'charErrors'), sum(outcomes, 'chars'))} / ${rate(sum(outcomes, 'wordErrors'), sum(outcomes, 'words'))}`;
    };
    const worst = (guard: GuardName) =>
      Math.max(
        ...half.map((_page, index) => {
          const before = uncorrected[index];
          const after = of(guard)[index];
          return (100 * (after.charErrors - before.charErrors)) / Math.max(1, before.chars);
        }),
      );
    const before = of('edit ratio');
    const first = of('first evidence');
    const after = of('evidence');
    const gemini = of('evidence, gemini');
    const same = gemini.every((item, index) => item.charErrors === after[index].charErrors && item.refused === after[index].refused);
    return [
      behaviour,
      `${cerNone} / ${werNone}`,
      cell('none'),
      cell('edit ratio'),
      cell('first evidence'),
      cell('evidence'),
      `${sum(before, 'changed')} / ${sum(before, 'refused')}`,
      `${sum(first, 'changed')} / ${sum(first, 'refused')}`,
      `${sum(after, 'changed')} / ${sum(after, 'refused')}`,
      [worst('edit ratio'), worst('first evidence'), worst('evidence')]
        .map((delta) => `${delta >= 0 ? '+' : ''}${delta.toFixed(2)}`)
        .join(' / '),
      same ? 'same' : 'DIFFERENT',
    ];
  });
  return markdownTable(
    [
      'stand-in',
      'no correction CER / WER %',
      'no guards',
      'before: edit ratio 0.3',
      'first evidence guard',
      'after: evidence + dropped run',
      'changed / refused, before',
      'changed / refused, first',
      'changed / refused, after',
      'worst page Δ CER points, before / first / after',
      'gemini',
    ],
    rows,
  );
}

function keptGain(half: RecognisedPage[], behaviour: Behaviour, guard: GuardName): string {
  const total = (key: string) =>
    sum(
      half.map((page) => results.get(`${key}${page.name}`)!),
      'charErrors',
    );
  const none = total('none||');
  const possible = none - total(`${behaviour}|none|`);
  return `${((100 * (none - total(`${behaviour}|${guard}|`))) / Math.max(1, possible)).toFixed(0)} %`;
}

// ---- 4. cost: the forward passes of the evidence guard ----

let forwards = 0;
let alignments = 0;
let forwardMs = 0;
let changedPages = 0;
for (const page of heldOut) {
  const lines = allLines(page.page);
  for (const behaviour of BEHAVIOURS) {
    const answer = standInAnswer(
      behaviour,
      lines.map((line) => ({ id: line.id, text: line.text })),
      standInPage(page),
    );
    const started = performance.now();
    lines.forEach((line, index) => {
      const corrected = normalizeLineText(answer[index].text);
      if (corrected === normalizeLineText(line.text)) return;
      const frames = page.lineFrames.get(line.id);
      const verdict = checkLineEvidence(line, corrected, frames, chosen);
      // two forward passes; two Viterbi alignments for a line the likelihood let through
      if (frames) forwards += 2;
      if (frames && (verdict.accept || /unexplained/.test(verdict.reason))) alignments += 2;
    });
    forwardMs += performance.now() - started;
    changedPages += 1;
  }
}

const report = [
  `Pages: ${pages.length} val pages of htr-pages (${documents.length} documents), read by ${pages[0] ? 'the configured setup' : '-'}; tune half ${tune.length} pages (${tuneDocuments.size} documents), held-out half ${heldOut.length} pages.`,
  `Chosen on the tune half (${tried} settings): maxLossPerChar ${chosen.maxLossPerChar}, confidenceSlack ${chosen.confidenceSlack}, maxLossPerEdit ${chosen.maxLossPerEdit}, framelessMaxEditRatio ${chosen.framelessMaxEditRatio}, maxDroppedRun ${chosen.maxDroppedRun}.`,
  '',
  `Held-out half (${heldOut.length} pages):`,
  '',
  halfTable(heldOut),
  '',
  `Gain of the perfect stand-in kept (held-out): edit ratio ${keptGain(heldOut, 'perfect', 'edit ratio')}, first evidence ${keptGain(heldOut, 'perfect', 'first evidence')}, evidence ${keptGain(heldOut, 'perfect', 'evidence')}; noisy: ${keptGain(heldOut, 'noisy', 'edit ratio')} / ${keptGain(heldOut, 'noisy', 'first evidence')} / ${keptGain(heldOut, 'noisy', 'evidence')}.`,
  '',
  `Tune half (${tune.length} pages; the thresholds were chosen here):`,
  '',
  halfTable(tune),
  '',
  `Gain of the perfect stand-in kept (tune): edit ratio ${keptGain(tune, 'perfect', 'edit ratio')}, first evidence ${keptGain(tune, 'perfect', 'first evidence')}, evidence ${keptGain(tune, 'perfect', 'evidence')}; noisy: ${keptGain(tune, 'noisy', 'edit ratio')} / ${keptGain(tune, 'noisy', 'first evidence')} / ${keptGain(tune, 'noisy', 'evidence')}.`,
  '',
  `Cost (held-out, every behaviour): ${forwards} CTC forward passes and ${alignments} Viterbi alignments over ${changedPages} corrected pages, ${((forwards + alignments) / changedPages).toFixed(1)} passes a page, ${(forwardMs / changedPages).toFixed(1)} ms a page (${(forwardMs / Math.max(1, forwards + alignments)).toFixed(2)} ms a pass).`,
].join('\n');
console.log(report);
if (values.out) writeFileSync(values.out, `${report}\n`);
