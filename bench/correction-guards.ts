// `npm run bench:correction-guards`: the correction step's line guards measured on the val pages of
// ../shared/datasets/htr-pages (ground truth known), against stand-in correction models that
// speak the real OpenAI and Gemini wire formats (bench/lib/stand-in-correctors.ts: perfect, noisy,
// modernising, completing, shifting, hallucinating, truncating, guessing).
//
//  1. The pages are read once by the configured setup and kept with each line's output frames
//     (bench/lib/recognised-pages.ts; --cache DIR, default /tmp/hwr-correction-guards).
//  2. The documents are split in two halves, stratified by their uncorrected CER
//     (bench/lib/document-halves.ts, ADR 0046; --split alternate: alternately in dataset order, the
//     split before it; --swap-halves tunes on the other half, to see how the rule fares the other way
//     round; the tables then say "tune half" of the half tuned on). A page whose ground truth
//     leaves drawn lines without text is set aside from tuning and the tables (ADR 0050). The evidence guard's
//     thresholds are chosen on the tune half (--degraded blurred,small,faded adds the tune half
//     again with its images degraded, bench/lib/degraded-pages.ts; tried, not the default: see
//     docs/correction.md; --tune-models DIR,... adds it again as read by other setups, e.g.
//     bench/setups/default-layout-v2-recognizer: the previous recognizer), line by line (each
//     line's errors against the ground truth aligned under it, bench/lib/aligned-truth.ts): the most
//     gain of the perfect and noisy stand-ins such that no misbehaving stand-in (guessing among
//     them), nor a truncation of another length
//     (TRUNCATIONS), makes the tuning pages worse in total or any page worse by more than
//     --page-margin CER points (default 0.5). In two stages: the bounds every line is held to, then
//     the looser bounds of a page whose answer the image supports.
//  3. Each behaviour corrects every page through the real corrector (LlmCorrector, the openai
//     provider against the stand-in server; the evidence guard again through the gemini provider):
//     without guards, with the edit-ratio guard (before, CORRECTION_MAX_EDIT_RATIO 0.3), the
//     evidence guard shipped (settings.ts's EVIDENCE_GUARD) and the one chosen now (after); page CER and WER
//     (bench/lib/text-metrics.ts), lines changed and refused, the worst page; reported for the
//     held-out half (and, for reference, the tune half).
//  4. The guard's cost: the CTC forward passes and alignments per page and their time.
//
//   node bench/correction-guards.ts [--dataset DIR] [--cache DIR] [--degraded none|blurred,small,faded]
//                                   [--tune-models DIR,...] [--page-margin 0.5] [--split stratified|alternate]
//                                   [--swap-halves] [--out FILE.md]
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
  checkPageEvidence,
  droppedCharacters,
  type EvidenceGuardSettings,
  lineEvidence,
} from '../src/recognition/correction/line-evidence.ts';
import { LlmCorrector } from '../src/recognition/correction/llm-corrector.ts';
import { EVIDENCE_GUARD, evidenceGuard, type CorrectionSettings, type LineGuardSettings } from '../src/recognition/correction/settings.ts';
import { editDistance as lineEditDistance, editRatio } from '../src/recognition/correction/edit-distance.ts';
import { allLines, type PageResult } from '../src/recognition/page/page-result.ts';
import { FakeLlmServer } from '../test/support/fake-llm-server.ts';
import { alignedTruth } from './lib/aligned-truth.ts';
import { DEGRADATIONS, type Degradation, degradedPages } from './lib/degraded-pages.ts';
import { stratifiedHalves } from './lib/document-halves.ts';
import { DEFAULT_HTR_PAGES, pagesFromDataset, untranscribedLines } from './lib/htr-pages.ts';
import { type RecognisedPage, recognisedPages } from './lib/recognised-pages.ts';
import {
  BEHAVIOURS,
  type Behaviour,
  MISBEHAVIOURS,
  standInAnswer,
  standInHandler,
  type StandInPage,
  TRUNCATIONS,
  type Truncation,
  truncationAnswer,
} from './lib/stand-in-correctors.ts';
import { markdownTable } from './lib/table.ts';
import { characterErrors, normaliseText, scorePage } from './lib/text-metrics.ts';

const { values } = parseArgs({
  options: {
    dataset: { type: 'string', default: DEFAULT_HTR_PAGES },
    cache: { type: 'string', default: '/tmp/hwr-correction-guards' },
    degraded: { type: 'string', default: 'none' },
    'tune-models': { type: 'string', default: '' },
    'page-margin': { type: 'string', default: '0.5' },
    split: { type: 'string', default: 'stratified' },
    'swap-halves': { type: 'boolean', default: false },
    out: { type: 'string' },
  },
});
const pageMargin = Number(values['page-margin']) / 100;
const progress = (message: string): void => void process.stderr.write(`${message}\n`);

const evalPages = pagesFromDataset(values.dataset, 'val', path.join(values.cache, 'images'));
const readDir = path.join(values.cache, `read-${process.env.RECOGNITION_DECODER ?? 'beam'}`);
const pages = await recognisedPages(evalPages, readDir, progress);
const documents = [...new Set(pages.map((page) => page.document))];
const splitTune = halvesBy(values.split).tune;
const tuneDocuments = values['swap-halves'] ? new Set(documents.filter((document) => !splitTune.has(document))) : splitTune;

/** The documents tuned on: stratified by uncorrected CER (ADR 0046), or alternately in dataset order (before it). */
function halvesBy(split: string | undefined): { tune: Set<string> } {
  if (split === 'alternate') return { tune: new Set(documents.filter((_, index) => index % 2 === 0)) };
  if (split !== 'stratified') throw new Error(`--split: ${split} is neither stratified nor alternate`);
  return stratifiedHalves(
    documents.map((document) => {
      const scores = pages
        .filter((page) => page.document === document)
        .map(
          (page) =>
            scorePage(
              allLines(page.page).map((line) => line.text),
              page.groundTruth,
            ).characters,
        );
      return {
        document,
        pages: scores.length,
        errors: scores.reduce((sum, score) => sum + score.errors, 0),
        length: scores.reduce((sum, score) => sum + score.length, 0),
      };
    }),
  );
}
// A page whose ground truth leaves drawn lines without text is set aside (ADR 0050): there the
// perfect stand-in's nearest ground-truth line is a line cut short, and CER scores the transcription's
// gaps rather than the guard. The halves are split over every page, so no other page changes side.
const setAside = pages.filter((page) => untranscribedLines(page.groundTruth) > 0);
const scored = pages.filter((page) => !setAside.includes(page));
const tune = scored.filter((page) => tuneDocuments.has(page.document));
const heldOut = scored.filter((page) => !tuneDocuments.has(page.document));
const heldOutWithSetAside = pages.filter((page) => !tuneDocuments.has(page.document));

function standInPage(page: RecognisedPage): StandInPage {
  return {
    groundTruth: page.groundTruth,
    otherText: pages
      .filter((other) => other.document !== page.document)
      .flatMap((other) => other.groundTruth.map(normaliseText).filter((line) => line.length >= 10)),
  };
}

// ---- 2. the thresholds, chosen line by line on the tuning pages ----

const degradations = values.degraded === 'none' ? [] : (values.degraded.split(',') as Degradation[]);
for (const degradation of degradations)
  if (!DEGRADATIONS.includes(degradation)) throw new Error(`--degraded: ${degradation} is none of ${DEGRADATIONS.join(', ')}`);
const tuneNames = new Set(tune.map((page) => page.name));
const tuneEval = evalPages.filter((page) => tuneNames.has(page.name));
const degraded: RecognisedPage[] = [];
for (const degradation of degradations)
  degraded.push(
    ...(await recognisedPages(await degradedPages(tuneEval, degradation, path.join(values.cache, 'images-degraded')), readDir, progress)),
  );
// the tune half as other setups read it (their own frames, classes and layout): more lines read wrong, and read wrong
// as a recognizer reads an unfamiliar hand rather than a damaged image
const tuneModels = values['tune-models'].split(',').filter((dir) => dir !== '');
const otherReadings: RecognisedPage[] = [];
for (const dir of tuneModels) {
  const setup = path.basename(path.resolve(dir));
  const read = await recognisedPages(tuneEval, path.join(values.cache, `read-${setup}`), progress, dir);
  otherReadings.push(...read.map((page) => ({ ...page, name: `${page.name} (${setup})` })));
}
const tuning = [...tune, ...degraded, ...otherReadings];

type TuningBehaviour = Behaviour | Truncation;
const TUNING_BEHAVIOURS: readonly TuningBehaviour[] = [...BEHAVIOURS, ...(Object.keys(TRUNCATIONS) as Truncation[])];
const TUNING_MISBEHAVIOURS: readonly TuningBehaviour[] = [...MISBEHAVIOURS, ...(Object.keys(TRUNCATIONS) as Truncation[])];

interface LineCase {
  /** `${behaviour}\u0000${page}`: the unit the page margin is checked on. */
  key: string;
  page: string;
  behaviour: TuningBehaviour;
  confidence: number;
  /** null: the line is not judged by frames (none, or most of the text unwritable: judged by the edit ratio). */
  lossPerChar: number | null;
  lossPerEdit: number;
  /** Recognised characters in a row the correction leaves to blanks, and the most ink one such run held (droppedCharacters). */
  droppedRun: number;
  droppedInk: number;
  editRatio: number;
  editDistance: number;
  /** Errors against the aligned ground truth: corrected less recognised (negative: the correction helps). */
  delta: number;
}

/** The line cases of one page; the truncations of other lengths on the pages as read (a degraded page's frames hardly show a short word, so one dropped there moves a small page past the margin whatever the guard). */
function lineCases(page: RecognisedPage, behaviours: readonly TuningBehaviour[] = TUNING_BEHAVIOURS): LineCase[] {
  const lines = allLines(page.page);
  const truth = alignedTruth(
    lines.map((line) => line.text),
    page.groundTruth,
  );
  const asked = lines.map((line) => ({ id: line.id, text: line.text }));
  const cases: LineCase[] = [];
  for (const behaviour of behaviours) {
    const answer =
      behaviour in TRUNCATIONS
        ? truncationAnswer(behaviour as Truncation, asked, standInPage(page))
        : standInAnswer(behaviour as Behaviour, asked, standInPage(page));
    lines.forEach((line, index) => {
      const corrected = normalizeLineText(answer[index].text);
      if (corrected === normalizeLineText(line.text)) return;
      const frames = page.lineFrames.get(line.id);
      const evidence = frames ? lineEvidence(frames, line.text, corrected) : null;
      const judged = evidence !== null && evidence.unknown * 3 <= evidence.characters;
      const dropped = frames && judged ? droppedCharacters(frames, line.text, corrected) : { longestRun: 0, droppedInk: 0 };
      const errors = (text: string): number => characterErrors(normaliseText(text), truth[index]).errors;
      cases.push({
        key: `${behaviour}\u0000${page.name}`,
        page: page.name,
        behaviour,
        confidence: line.confidence,
        lossPerChar: judged ? evidence.lossPerChar : null,
        lossPerEdit: evidence?.lossPerEdit ?? 0,
        droppedRun: dropped.longestRun,
        droppedInk: dropped.droppedInk,
        editRatio: editRatio(line.text, corrected),
        editDistance: lineEditDistance(line.text, corrected),
        delta: errors(corrected) - errors(line.text),
      });
    });
  }
  return cases;
}

/** The verdict of the bounds every line is held to (checkLineEvidence). */
function accepts(line: LineCase, settings: EvidenceGuardSettings): boolean {
  if (line.lossPerChar !== null)
    return (
      line.lossPerChar <= allowedLoss(line.confidence, settings) &&
      line.lossPerEdit <= settings.maxLossPerEdit &&
      line.droppedRun <= settings.maxDroppedRun &&
      line.droppedInk <= settings.maxDroppedInk
    );
  return line.editDistance <= 1 || line.editRatio <= settings.framelessMaxEditRatio;
}

/** The verdicts with the looser bounds of a supported page (checkPageEvidence), given each page's share of lines `accepts` passes. */
function acceptsOnPage(line: LineCase, settings: EvidenceGuardSettings, share: ReadonlyMap<string, number>): boolean {
  if (accepts(line, settings)) return true;
  const support = settings.supportedPage;
  if (support === null || line.lossPerChar === null || (share.get(line.key) ?? 0) < support.minShare) return false;
  return (
    line.lossPerChar <= allowedLoss(line.confidence, support) &&
    line.lossPerEdit <= support.maxLossPerEdit &&
    line.droppedRun <= settings.maxDroppedRun &&
    line.droppedInk <= support.maxDroppedInk
  );
}

const referenceChars = new Map(
  [...pages, ...degraded, ...otherReadings].map((page) => [page.name, Array.from(scoringReference(page.groundTruth)).length] as const),
);

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

/** The gain of perfect and noisy under a verdict, or null when a misbehaving stand-in makes the tuning pages or a page worse. */
function scoreVerdict(cases: readonly LineCase[], accept: (line: LineCase) => boolean): Omit<Choice, 'settings'> | null {
  const perPage = new Map<string, number>();
  const total = new Map<TuningBehaviour, number>();
  for (const line of cases) {
    if (!accept(line)) continue;
    total.set(line.behaviour, (total.get(line.behaviour) ?? 0) + line.delta);
    if (TUNING_MISBEHAVIOURS.includes(line.behaviour)) perPage.set(line.key, (perPage.get(line.key) ?? 0) + line.delta);
  }
  const safe =
    TUNING_MISBEHAVIOURS.every((behaviour) => (total.get(behaviour) ?? 0) <= 0) &&
    [...perPage].every(([key, delta]) => delta <= pageMargin * (referenceChars.get(key.split('\u0000')[1]) ?? 0));
  if (!safe) return null;
  const perfectGain = -(total.get('perfect') ?? 0);
  const noisyGain = -(total.get('noisy') ?? 0);
  return { gain: perfectGain + noisyGain, perfectGain, noisyGain };
}

const INFINITY = Number.POSITIVE_INFINITY;

/** Stage 1: the bounds every line is held to. */
function chooseLineBounds(cases: readonly LineCase[]): { choice: Choice; tried: number } {
  let best: Choice | null = null;
  let tried = 0;
  for (let maxLossPerChar = 0.5; maxLossPerChar <= 3.001; maxLossPerChar += 0.25)
    for (const confidenceSlack of [0, 1, 2, 4, 6])
      for (const framelessMaxEditRatio of [0, 0.1])
        for (const maxLossPerEdit of [4, 6, 8, INFINITY])
          for (const maxDroppedRun of [4, 6, INFINITY])
            for (const maxDroppedInk of [6, 8, 10, 12, 15, 20, INFINITY]) {
              tried += 1;
              const settings: EvidenceGuardSettings = {
                maxLossPerChar,
                confidenceSlack,
                maxLossPerEdit,
                framelessMaxEditRatio,
                maxDroppedRun,
                maxDroppedInk,
                supportedPage: null,
              };
              const score = scoreVerdict(cases, (line) => accepts(line, settings));
              if (score && (best === null || score.gain > best.gain)) best = { settings, ...score };
            }
  if (best === null) throw new Error('no threshold keeps every misbehaving stand-in out on the tuning pages');
  return { choice: best, tried };
}

/** Per behaviour and page, the share of its changed lines judged by frames that the line bounds accept. */
function shareOf(cases: readonly LineCase[], settings: EvidenceGuardSettings): Map<string, number> {
  const judged = new Map<string, number>();
  const passed = new Map<string, number>();
  for (const line of cases) {
    if (line.lossPerChar === null) continue;
    judged.set(line.key, (judged.get(line.key) ?? 0) + 1);
    if (accepts(line, settings)) passed.set(line.key, (passed.get(line.key) ?? 0) + 1);
  }
  return new Map([...judged].map(([key, count]) => [key, (passed.get(key) ?? 0) / count] as const));
}

/** Stage 2: the looser bounds of a page whose answer the image supports, the line bounds fixed. */
function chooseSupportedBounds(cases: readonly LineCase[], base: Choice): { choice: Choice; tried: number } {
  const share = shareOf(cases, base.settings);
  let best = base;
  let tried = 0;
  // no bound on the loss per character last (ADR 0047): on a supported page the loss per edit and the dropped ink may do
  const perCharBounds = [...Array.from({ length: 19 }, (_, step) => 1.5 + step * 0.25), INFINITY];
  // the line bound's ink first, so that a looser one is chosen only for a larger gain (ADR 0048)
  const lineInk = base.settings.maxDroppedInk;
  const inkBounds = [...new Set([lineInk, 12, 15, 20, 30, INFINITY])].filter((ink) => ink >= lineInk);
  for (const minShare of [0.5, 0.6, 0.7, 0.8, 0.9])
    for (const maxLossPerChar of perCharBounds)
      for (const confidenceSlack of [0, 1, 2, 4, 6])
        for (const maxLossPerEdit of [6, 8, 12, INFINITY])
          for (const maxDroppedInk of inkBounds) {
            tried += 1;
            const settings = {
              ...base.settings,
              supportedPage: { minShare, maxLossPerChar, confidenceSlack, maxLossPerEdit, maxDroppedInk },
            };
            const score = scoreVerdict(cases, (line) => acceptsOnPage(line, settings, share));
            if (score && score.gain > best.gain) best = { settings, ...score };
          }
  return { choice: best, tried };
}

const tuneCases = [
  ...tune.flatMap((page) => lineCases(page)),
  ...degraded.flatMap((page) => lineCases(page, BEHAVIOURS)),
  ...otherReadings.flatMap((page) => lineCases(page)),
];
const stage1 = chooseLineBounds(tuneCases);
const stage2 = chooseSupportedBounds(tuneCases, stage1.choice);
const choice = stage2.choice;
const tried = stage1.tried + stage2.tried;
const chosen = choice.settings;
progress(
  `chosen on ${tuning.length} tuning pages (${tried} settings tried): ${JSON.stringify(chosen)}; perfect gain ${choice.perfectGain}, noisy ${choice.noisyGain} characters (line bounds alone: ${stage1.choice.perfectGain}, ${stage1.choice.noisyGain})`,
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

const GUARDS = {
  none: { api: 'openai', guard: { kind: 'edit-ratio' }, maxEditRatio: 1 },
  'edit ratio': { api: 'openai', guard: { kind: 'edit-ratio' }, maxEditRatio: 0.3 },
  'shipped evidence': { api: 'openai', guard: evidenceGuard(EVIDENCE_GUARD), maxEditRatio: 0.3 },
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
    const first = of('shipped evidence');
    const after = of('evidence');
    const gemini = of('evidence, gemini');
    const same = gemini.every((item, index) => item.charErrors === after[index].charErrors && item.refused === after[index].refused);
    return [
      behaviour,
      `${cerNone} / ${werNone}`,
      cell('none'),
      cell('edit ratio'),
      cell('shipped evidence'),
      cell('evidence'),
      `${sum(before, 'changed')} / ${sum(before, 'refused')}`,
      `${sum(first, 'changed')} / ${sum(first, 'refused')}`,
      `${sum(after, 'changed')} / ${sum(after, 'refused')}`,
      [worst('edit ratio'), worst('shipped evidence'), worst('evidence')]
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
      'shipped evidence guard',
      'after: evidence, supported pages',
      'changed / refused, before',
      'changed / refused, shipped',
      'changed / refused, after',
      'worst page Δ CER points, before / shipped / after',
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
    const proposed = new Map<string, string>();
    lines.forEach((line, index) => {
      const corrected = normalizeLineText(answer[index].text);
      if (corrected !== normalizeLineText(line.text)) proposed.set(line.id, corrected);
    });
    const started = performance.now();
    const verdicts = checkPageEvidence(lines, proposed, page.lineFrames, chosen);
    for (const [id, verdict] of verdicts) {
      // two forward passes a line; two Viterbi alignments for a line the likelihood let through
      if (!page.lineFrames.has(id)) continue;
      forwards += 2;
      if (verdict.accept || /unexplained/.test(verdict.reason)) alignments += 2;
    }
    forwardMs += performance.now() - started;
    changedPages += 1;
  }
}

// ---- the truncations of other lengths on the held-out half, line by line (aligned truth) ----

function truncationTable(half: readonly RecognisedPage[]): string {
  const cases = half.flatMap((page) => lineCases(page, ['truncating', ...(Object.keys(TRUNCATIONS) as Truncation[])]));
  const cell = (behaviour: TuningBehaviour, settings: EvidenceGuardSettings): string => {
    const share = shareOf(cases, settings);
    const perPage = new Map<string, number>();
    for (const line of cases)
      if (line.behaviour === behaviour && acceptsOnPage(line, settings, share))
        perPage.set(line.page, (perPage.get(line.page) ?? 0) + line.delta);
    const total = [...perPage.values()].reduce((sum, delta) => sum + delta, 0);
    const worst = Math.max(0, ...[...perPage].map(([page, delta]) => (100 * delta) / Math.max(1, referenceChars.get(page) ?? 0)));
    return `${total} / +${worst.toFixed(2)}`;
  };
  return markdownTable(
    ['truncation', 'shipped evidence guard: Δ errors / worst page Δ CER points', 'after'],
    (['truncating', ...Object.keys(TRUNCATIONS)] as TuningBehaviour[]).map((behaviour) => [
      behaviour,
      cell(behaviour, EVIDENCE_GUARD),
      cell(behaviour, chosen),
    ]),
  );
}

function tuningCer(half: readonly RecognisedPage[]): string {
  let errors = 0;
  let length = 0;
  for (const page of half) {
    const score = scorePage(
      allLines(page.page).map((line) => line.text),
      page.groundTruth,
    );
    errors += score.characters.errors;
    length += score.characters.length;
  }
  return rate(errors, length);
}

const report = [
  `Pages: ${pages.length} val pages of htr-pages (${documents.length} documents), read by ${pages[0] ? 'the configured setup' : '-'}; tune half ${tune.length} pages (${tuneDocuments.size} documents), held-out half ${heldOut.length} pages${values['swap-halves'] ? " (--swap-halves: the split's held-out half tuned on)" : ''}.`,
  `Tuning pages: the tune half and ${degraded.length} degraded copies (${degradations.join(', ') || 'none'}): CER ${tuningCer(tune)} % and ${tuningCer(degraded)} % uncorrected; read by other setups (${tuneModels.join(', ') || 'none'}): ${otherReadings.length} pages, CER ${tuningCer(otherReadings)} %.`,
  `Chosen on the tuning pages (${tried} settings): maxLossPerChar ${chosen.maxLossPerChar}, confidenceSlack ${chosen.confidenceSlack}, maxLossPerEdit ${chosen.maxLossPerEdit}, framelessMaxEditRatio ${chosen.framelessMaxEditRatio}, maxDroppedRun ${chosen.maxDroppedRun}, maxDroppedInk ${chosen.maxDroppedInk}; supported page: ${JSON.stringify(chosen.supportedPage)}. Tuning gain (characters): perfect ${choice.perfectGain}, noisy ${choice.noisyGain}; line bounds alone ${stage1.choice.perfectGain}, ${stage1.choice.noisyGain}.`,
  '',
  `Set aside, their ground truth leaving drawn lines untranscribed (ADR 0050): ${setAside.map((page) => `${page.name} (${tuneDocuments.has(page.document) ? 'tune' : 'held-out'} half; ${untranscribedLines(page.groundTruth)} of ${page.groundTruth.length} lines)`).join(', ') || 'none'}.`,
  '',
  `Held-out half (${heldOut.length} pages):`,
  '',
  halfTable(heldOut),
  '',
  `Gain of the perfect stand-in kept (held-out): edit ratio ${keptGain(heldOut, 'perfect', 'edit ratio')}, shipped evidence ${keptGain(heldOut, 'perfect', 'shipped evidence')}, evidence ${keptGain(heldOut, 'perfect', 'evidence')}; noisy: ${keptGain(heldOut, 'noisy', 'edit ratio')} / ${keptGain(heldOut, 'noisy', 'shipped evidence')} / ${keptGain(heldOut, 'noisy', 'evidence')}. With the set-aside pages of the held-out half (${heldOutWithSetAside.length} pages), perfect: ${keptGain(heldOutWithSetAside, 'perfect', 'edit ratio')} / ${keptGain(heldOutWithSetAside, 'perfect', 'shipped evidence')} / ${keptGain(heldOutWithSetAside, 'perfect', 'evidence')}.`,
  '',
  'Truncations of other lengths, held-out half, line by line against the aligned ground truth (not through the corrector):',
  '',
  truncationTable(heldOut),
  '',
  `Tune half (${tune.length} pages; the thresholds were chosen here):`,
  '',
  halfTable(tune),
  '',
  `Gain of the perfect stand-in kept (tune): edit ratio ${keptGain(tune, 'perfect', 'edit ratio')}, shipped evidence ${keptGain(tune, 'perfect', 'shipped evidence')}, evidence ${keptGain(tune, 'perfect', 'evidence')}; noisy: ${keptGain(tune, 'noisy', 'edit ratio')} / ${keptGain(tune, 'noisy', 'shipped evidence')} / ${keptGain(tune, 'noisy', 'evidence')}.`,
  '',
  `Cost (held-out, every behaviour): ${forwards} CTC forward passes and ${alignments} Viterbi alignments over ${changedPages} corrected pages, ${((forwards + alignments) / changedPages).toFixed(1)} passes a page, ${(forwardMs / changedPages).toFixed(1)} ms a page (${(forwardMs / Math.max(1, forwards + alignments)).toFixed(2)} ms a pass).`,
].join('\n');
console.log(report);
if (values.out) writeFileSync(values.out, `${report}\n`);
