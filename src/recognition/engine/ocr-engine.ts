// The loaded models of one model directory: detection, one recognizer or more (the main
// one and a screening one for print, chosen per page and line by confidence, and optionally a
// print reader of our own for the pages surely printed), optional orientation.
// Loaded once per process (see shared-engine.ts); every model run passes through one
// semaphore so that concurrent pages never use more threads than the machine has cores.
import path from 'node:path';
import type { ModelInfo } from '../page/page-result.ts';
import { turnedBy, type RgbImage } from '../image/raster.ts';
import { groupLines } from '../layout/group-lines.ts';
import { orderRegions, type LayoutRegion } from '../layout/reading-order.ts';
import { detectText, type DetectedBox } from '../layout/text-detector.ts';
import { segmentLines } from '../layout/line-segmenter.ts';
import { outlinedLine } from '../layout/outlined-line.ts';
import { withLinesKept } from '../layout/kept-lines.ts';
import type { ModelSpec, NamedRecognizerSpec, SelectionSpec } from '../models/model-spec.ts';
import type { LayoutLine } from '../layout/group-lines.ts';
import { enclosingRect } from '../page/geometry.ts';
import { withoutFaintLines } from '../layout/ink-contrast.ts';
import { lazySession, type InferenceSession } from '../models/onnx.ts';
import { Semaphore } from '../threads/concurrency.ts';
import { LineRecognizer, type DecoderChoice, type PieceRead } from '../reading/line-recognizer.ts';
import { upsideDown } from '../reading/orientation.ts';
import {
  likeliestTurn,
  type PageTurn,
  probeSpan,
  quarterTurnsWorthTrying,
  type SideReading,
  TURN_PROBE_LINES,
  writesAlong,
} from '../reading/page-turn.ts';
import {
  lineConfidence,
  lineReadSurely,
  mainReadingIsNoise,
  pageLooksPrinted,
  probeLines,
  probeSurelyPrinted,
  screeningReadsProbeBetter,
  screeningSuffices,
  screeningWins,
} from '../reading/select-reading.ts';
import type { ModelGate, PlacedCharacter } from '../reading/text-recognizer.ts';

export interface EngineSettings {
  /** onnxruntime intra-op threads per model run. */
  threads: number;
  /** Model runs at once across all pages of this process. */
  concurrency: number;
  /** CTC decoding of recognizers that name a language model (others decode greedily). */
  decoder?: DecoderChoice;
}

/** The lines a page was read on, and what was read in each piece. */
export interface PageReading {
  /** The regions given, or the detector's when the page was laid out again. */
  regions: readonly LayoutRegion[];
  readings: Map<DetectedBox, PieceReading>;
}

/** What recognition read in one detected piece, with the crop it read it from. */
export interface PieceReading extends PieceRead {
  /** Which recognizer's reading the piece's line kept ('print': the screening section's print reader). */
  recognizer: 'main' | 'screening' | 'print';
}

/** The screening recognizer, the rule that shares lines with it, and the print reader that may read in its place. */
interface Screening {
  recognizer: LineRecognizer;
  selection: SelectionSpec;
  print: LineRecognizer | null;
}

/** Each line's characters as its pieces read them (a probe's reading, select-reading.ts). */
function charactersOf(read: ReadonlyMap<LayoutLine, readonly PieceReading[]>): PlacedCharacter[][][] {
  return [...read.values()].map((reads) => reads.map((piece) => piece.characters));
}

/** Each line's width: its pieces' widths summed (what the probes choose their widest lines by). */
function lineWidths(lines: readonly LayoutLine[]): number[] {
  return lines.map((line) => line.fragments.reduce((sum, piece) => sum + piece.width, 0));
}

/** A line's text as its pieces read it, pieces apart by a space. */
function textOf(reads: readonly PieceReading[]): string {
  return reads.map((read) => read.characters.map((character) => character.text).join('')).join(' ');
}

export class OcrEngine {
  readonly spec: ModelSpec;
  readonly settings: EngineSettings;
  private readonly detection: InferenceSession;
  private readonly segmentation: InferenceSession | null;
  private readonly main: LineRecognizer;
  private readonly screening: Screening | null;
  private readonly orientation: InferenceSession | null;
  private readonly gate: ModelGate;
  /** Whether close() releases the detector, segmenter, screening and orientation too (false: they are another engine's). */
  private readonly ownsSharedParts: boolean;
  /** Layouts this engine's segmenter made (read() may lay their page out again when it is printed). */
  private readonly segmented = new WeakSet<readonly LayoutRegion[]>();
  /** The detector's layouts that keep some of the segmenter's lines (read()). */
  private readonly partlySegmented = new WeakSet<readonly LayoutRegion[]>();
  /**
   * The screening recognizer's reading of a layout's probe lines, kept with the image it was read
   * on: upright() reads it before read() needs it, and it is read once (screeningProbe).
   */
  private readonly probes = new WeakMap<
    readonly LayoutRegion[],
    { image: RgbImage; probe: readonly LayoutLine[]; read: Map<LayoutLine, PieceReading[]> }
  >();

  private constructor(
    spec: ModelSpec,
    settings: EngineSettings,
    parts: {
      detection: InferenceSession;
      segmentation: InferenceSession | null;
      main: LineRecognizer;
      screening: Screening | null;
      orientation: InferenceSession | null;
    },
    shared?: { gate: ModelGate },
  ) {
    this.spec = spec;
    this.settings = settings;
    this.detection = parts.detection;
    this.segmentation = parts.segmentation;
    this.main = parts.main;
    this.screening = parts.screening;
    this.orientation = parts.orientation;
    if (shared) this.gate = shared.gate;
    else {
      const semaphore = new Semaphore(settings.concurrency);
      this.gate = (task) => semaphore.run(task);
    }
    this.ownsSharedParts = shared === undefined;
  }

  /**
   * The engine of a model setup. Each model loads when a page first needs it (warm(), or its first
   * run), not here: a handwritten page never loads the detector, a page laid out by its uploader
   * never loads the segmenter (docs/recognition.md, "Cold start"). The manifest, character sets and
   * language models are read here, so that a broken setup fails at once.
   */
  static async load(spec: ModelSpec, settings: EngineSettings): Promise<OcrEngine> {
    const decoder = settings.decoder ?? 'greedy';
    const { threads } = settings;
    const recognizer = (part: NamedRecognizerSpec) =>
      LineRecognizer.load({
        source: part.source,
        recognition: part.recognition,
        languageModel: part.languageModel,
        decoder,
        threads,
        lazy: true,
      });
    const [main, screening, print] = await Promise.all([
      recognizer({ source: spec.recognitionSource, recognition: spec.recognition, languageModel: spec.languageModel }),
      spec.screening ? recognizer(spec.screening) : Promise.resolve(null),
      spec.screening?.print ? recognizer(spec.screening.print) : Promise.resolve(null),
    ]);
    return new OcrEngine(spec, settings, {
      detection: lazySession(spec.detection.file, threads),
      segmentation: spec.segmentation ? lazySession(spec.segmentation.file, threads) : null,
      main,
      screening: screening && spec.screening ? { recognizer: screening, selection: spec.screening, print } : null,
      orientation: spec.orientation ? lazySession(spec.orientation.file, threads) : null,
    });
  }

  /**
   * Starts loading, without waiting, the models a page will use whatever it shows, so that they
   * load while its image is decoded; the others load at their first run (the detector on a printed
   * page or one the segmenter finds no line on). `layout`: the page is laid out here (the segmenter,
   * else the detector, and the main recognizer, which tells the page's side); `read`: its lines are
   * read (the recognizers, the print screening's probe and the orientation model). The print
   * reader loads when a page surely printed first needs it.
   */
  warm(page: { layout: boolean; read: boolean }): void {
    const parts: Array<{ warm(): Promise<void> } | null> = [];
    if (page.layout) parts.push(this.segmentation ?? this.detection, this.main);
    if (page.read) parts.push(this.orientation, this.screening?.recognizer ?? null, this.main);
    // A model that cannot be loaded fails the run that needs it, which tries again.
    for (const part of new Set(parts)) void part?.warm().catch(() => undefined);
  }

  /** Loads every model of the engine now (benchmarks that time pages apart from loading). */
  async loadAll(): Promise<void> {
    await Promise.all(
      [this.segmentation, this.detection, this.main, this.orientation, this.screening?.recognizer, this.screening?.print].map((part) =>
        part?.warm(),
      ),
    );
  }

  /** Which of the engine's own models are loaded now. */
  get loadedModels(): Array<'detection' | 'segmentation' | 'main' | 'screening' | 'print' | 'orientation'> {
    return [
      ...(this.detection.loaded ? (['detection'] as const) : []),
      ...(this.segmentation?.loaded ? (['segmentation'] as const) : []),
      ...(this.main.loaded ? (['main'] as const) : []),
      ...(this.screening?.recognizer.loaded ? (['screening'] as const) : []),
      ...(this.screening?.print?.loaded ? (['print'] as const) : []),
      ...(this.orientation?.loaded ? (['orientation'] as const) : []),
    ];
  }

  /** Every model of the engine: the segmenter (if any), the detector, orientation, the recognizers. */
  get models(): ModelInfo[] {
    return this.modelsUsed('both', true, { printReader: true });
  }

  /**
   * The models a page used: the one that laid it out ('uploaded': none), and the others when it was
   * read (the print reader only where it read lines the page kept: `printReader`); a page laid out
   * and not read names the main recognizer as what told its side (upright()).
   */
  modelsUsed(
    layoutBy: 'segmenter' | 'detector' | 'uploaded' | 'both',
    recognized: boolean,
    read: { printReader?: boolean } = {},
  ): ModelInfo[] {
    const info = (role: ModelInfo['role'], source: { name: string; version: string }, file: string): ModelInfo => ({
      role,
      name: `${source.name} (${path.basename(file)})`,
      version: source.version,
    });
    const own = { name: this.spec.name, version: this.spec.version };
    const segmentation = layoutBy === 'segmenter' || layoutBy === 'both' ? this.spec.segmentation : null;
    const detector = layoutBy === 'detector' || layoutBy === 'both';
    return [
      ...(segmentation ? [info('detection', own, segmentation.file)] : []),
      ...(detector ? [info('detection', own, this.spec.detection.file)] : []),
      ...(recognized
        ? [
            ...(this.spec.orientation ? [info('orientation', own, this.spec.orientation.file)] : []),
            info('recognition', this.main.source, this.main.file),
            ...(this.screening ? [info('recognition', this.screening.recognizer.source, this.screening.recognizer.file)] : []),
            ...(this.screening?.print && read.printReader
              ? [info('recognition', this.screening.print.source, this.screening.print.file)]
              : []),
          ]
        : layoutBy === 'uploaded'
          ? []
          : [info('orientation', this.main.source, this.main.file)]),
    ];
  }

  /** The decoder each recognizer uses (beam search only where a language model is named). */
  get decoders(): { main: DecoderChoice; screening: DecoderChoice | null; print: DecoderChoice | null } {
    return {
      main: this.main.decoder,
      screening: this.screening?.recognizer.decoder ?? null,
      print: this.screening?.print?.decoder ?? null,
    };
  }

  /**
   * Text lines in regions, in reading order: from the line segmenter where the model has one
   * and it finds lines (less its faint ones: show-through, stains), else from the text detector
   * and line grouping.
   */
  async layout(image: RgbImage): Promise<LayoutRegion[]> {
    return (await this.segmentedLayout(image)) ?? this.detectedLayout(image, false);
  }

  /** The line segmenter's lines, less its faint ones; null without a segmenter or where it finds none. */
  private async segmentedLayout(image: RgbImage): Promise<LayoutRegion[] | null> {
    const { segmentation } = this;
    if (!segmentation || !this.spec.segmentation) return null;
    const spec = this.spec.segmentation;
    const found = await this.gate(() => segmentLines(segmentation, spec, image));
    const lines = withoutFaintLines(image, found, this.spec.layout.faintLineRatio);
    if (lines.length === 0) return null;
    const regions = orderRegions(lines.map((line) => outlinedLine(line.polygon, line.baseline, spec.cropHeight)));
    this.segmented.add(regions);
    return regions;
  }

  /** Which model laid out regions this engine returned. */
  laidOutBy(regions: readonly LayoutRegion[]): 'segmenter' | 'detector' {
    return this.segmented.has(regions) ? 'segmenter' : 'detector';
  }

  /** The models whose lines regions this engine returned hold: both where the detector's layout kept lines of the segmenter's (read()). */
  layoutModels(regions: readonly LayoutRegion[]): 'segmenter' | 'detector' | 'both' {
    return this.partlySegmented.has(regions) ? 'both' : this.laidOutBy(regions);
  }

  private async detectedLayout(image: RgbImage, printed: boolean): Promise<LayoutRegion[]> {
    return orderRegions(await this.detectedLines(image, printed));
  }

  /**
   * The detector's lines. `printed`: faint lines are dropped, as from the segmenter's; print's ink
   * is even. On handwriting (a page the segmenter found no line on) the detector's boxes may hold
   * mostly paper or lie on a dark edge, so every line is kept (docs/recognition.md, "Faint lines").
   */
  private async detectedLines(image: RgbImage, printed: boolean): Promise<LayoutLine[]> {
    const boxes = await this.gate(() => detectText(this.detection, this.spec.detection, image));
    return withoutFaintLines(image, groupLines(boxes), printed ? this.spec.layout.faintLineRatio : 0);
  }

  /**
   * Reads every line: with the main recognizer alone, or, with a screening recognizer,
   * as select-reading.ts shares the lines between the two. A page the screening probe finds
   * printed, laid out by the line segmenter (trained on handwriting), is laid out again by the
   * text detector (trained on print, and more exact there: docs/recognition.md, "Layout"), less
   * its faint lines, and read on those lines, but for the probe lines the screening recognizer read
   * surely that the detector finds too: they keep their reading and the segmenter's outline, not
   * read twice. The regions returned are the ones read. Confidences are calibrated
   * (each recognizer's manifest map) once the readings are chosen, so the choice compares the
   * recognizers' own confidences, as its thresholds were set on.
   */
  async read(image: RgbImage, regions: readonly LayoutRegion[]): Promise<PageReading> {
    const first = await this.readRegions(image, regions, this.segmented.has(regions) ? 'stop' : 'read');
    if (first) return { regions, readings: this.calibrated(first) };
    const { surely, surelyRead } = this.probeReadSurely(image, regions);
    const { lines, placed } = withLinesKept(await this.detectedLines(image, true), [...surelyRead.keys()]);
    const detected = orderRegions(lines);
    if (placed.size > 0) this.partlySegmented.add(detected);
    const keptReadings = new Map([...surelyRead].filter(([line]) => placed.has(line)));
    const readings = await this.readRegions(image, detected, surely ? 'surely' : 'known', keptReadings);
    return { regions: detected, readings: this.calibrated(readings ?? new Map()) };
  }

  /**
   * A layout's probe as the screening recognizer read it (screeningProbe): whether it read the probe
   * at `printedAbove` or more, and the probe lines it read that surely, with their reading.
   */
  private probeReadSurely(
    image: RgbImage,
    regions: readonly LayoutRegion[],
  ): { surely: boolean; surelyRead: Map<LayoutLine, PieceReading[]> } {
    const probe = this.probes.get(regions);
    if (!probe || probe.image !== image || !this.screening) return { surely: false, surelyRead: new Map() };
    const { selection } = this.screening;
    const lineSure = ([, reads]: [LayoutLine, PieceReading[]]): boolean =>
      lineReadSurely(
        reads.map((read) => read.characters),
        selection,
      );
    return {
      surely: probeSurelyPrinted(charactersOf(probe.read), selection),
      surelyRead: new Map([...probe.read].filter(lineSure)),
    };
  }

  private calibrated(readings: Map<DetectedBox, PieceReading>): Map<DetectedBox, PieceReading> {
    const recognizers = { main: this.main, screening: this.screening?.recognizer, print: this.screening?.print };
    for (const [piece, reading] of readings) {
      const recognizer = recognizers[reading.recognizer];
      if (recognizer) readings.set(piece, { ...reading, characters: recognizer.calibrated(reading.characters) });
    }
    return readings;
  }

  /**
   * `printedPage`: 'read' reads a page the probe finds printed, 'stop' returns null for it before
   * reading more, 'known' takes the page as printed without a probe, 'surely' as printed surely
   * (its probe read at `printedAbove`). `screenedBefore`: lines the screening recognizer has read
   * already, not read again. On a page surely printed the print reader, where there is one, reads
   * the lines the screening recognizer has not; a page printed less surely (Fraktur, which it was
   * not trained on) is left to the screening recognizer.
   */
  private async readRegions(
    image: RgbImage,
    regions: readonly LayoutRegion[],
    printedPage: 'read' | 'stop' | 'known' | 'surely',
    screenedBefore: ReadonlyMap<LayoutLine, PieceReading[]> = new Map(),
  ): Promise<Map<DetectedBox, PieceReading> | null> {
    const lines = regions.flatMap((region) => region.lines);
    const pieces = lines.flatMap((line) => line.fragments);
    const flips =
      this.orientation && this.spec.orientation
        ? await upsideDown(this.orientation, this.spec.orientation, image, pieces, this.gate)
        : pieces.map(() => false);
    const flipOf = new Map(pieces.map((piece, index) => [piece, flips[index]]));
    const readings = new Map<DetectedBox, PieceReading>();
    const readLines = (
      recognizer: LineRecognizer,
      which: PieceReading['recognizer'],
      chosen: readonly LayoutLine[],
      pageText: readonly string[] = [],
    ): Promise<Map<LayoutLine, PieceReading[]>> => this.readLines(image, flipOf, recognizer, which, chosen, pageText);
    const keep = (line: LayoutLine, reads: readonly PieceReading[]): void =>
      line.fragments.forEach((piece, index) => readings.set(piece, reads[index]));
    const confidence = (reads: readonly PieceReading[]): number => lineConfidence(reads.map((read) => read.characters));

    if (!this.screening) {
      for (const [line, reads] of await readLines(this.main, 'main', lines)) keep(line, reads);
      return readings;
    }
    const { recognizer, selection } = this.screening;
    const known = printedPage === 'known' || printedPage === 'surely';
    const widths = lineWidths(lines);
    const probe = known ? [] : probeLines(widths, selection.probeLines).map((index) => lines[index]);
    const screened = this.orientation
      ? await readLines(recognizer, 'screening', probe)
      : await this.screeningProbe(image, regions, recognizer, probe);
    const screenedProbe = charactersOf(screened);
    for (const [line, reads] of screenedBefore) screened.set(line, reads);
    let printed = known || pageLooksPrinted(screenedProbe, selection);
    const surely = printedPage === 'surely' || (!known && probeSurelyPrinted(screenedProbe, selection));
    // a page that looks printed is asked again with the main recognizer's reading of the probe,
    // unless the screening read it too surely for handwriting
    let mainProbe = new Map<LayoutLine, PieceReading[]>();
    if (printed && !known && selection.sureMargin !== null && !surely) {
      mainProbe = await readLines(this.main, 'main', probe);
      printed = screeningReadsProbeBetter(screenedProbe, charactersOf(mainProbe), selection);
    }
    if (printed && printedPage === 'stop') return null;
    if (printed) {
      const rest = lines.filter((line) => !screened.has(line));
      const { print } = this.screening;
      const read =
        surely && print
          ? await readLines(print, 'print', rest, [...screened.values()].map(textOf))
          : await readLines(recognizer, 'screening', rest);
      for (const [line, reads] of read) screened.set(line, reads);
    }
    const unsure = lines.filter((line) => {
      const reads = screened.get(line);
      return !reads || !screeningSuffices(confidence(reads), printed, selection);
    });
    // The lines the screening reads surely are the page's text too: with them the main recognizer
    // chooses the page's language model on the whole page, not on the few lines left to it.
    const unsureLines = new Set(unsure);
    const sureText = lines
      .filter((line) => screened.has(line) && !unsureLines.has(line))
      .map((line) => textOf(screened.get(line) as PieceReading[]));
    const mainReads = await readLines(
      this.main,
      'main',
      unsure.filter((line) => !mainProbe.has(line)),
      sureText,
    );
    for (const line of unsure) {
      const read = mainProbe.get(line);
      if (read) mainReads.set(line, read);
    }
    for (const line of lines) {
      const screen = screened.get(line);
      const main = mainReads.get(line);
      if (!main) {
        if (screen) keep(line, screen);
      } else if (screen && screeningWins(confidence(screen), confidence(main), selection)) {
        keep(line, screen);
      } else if (mainReadingIsNoise(confidence(main), selection)) {
        keep(line, screen ?? main.map((read) => ({ ...read, characters: [] })));
      } else {
        keep(line, main);
      }
    }
    return readings;
  }

  /**
   * The screening recognizer's reading of `probe` (the layout's probe lines, none turned), read
   * once per layout and image: a copy, which the caller may add to.
   */
  private async screeningProbe(
    image: RgbImage,
    regions: readonly LayoutRegion[],
    recognizer: LineRecognizer,
    probe: readonly LayoutLine[],
  ): Promise<Map<LayoutLine, PieceReading[]>> {
    const known = this.probes.get(regions);
    if (known?.image === image && known.probe.length === probe.length && known.probe.every((line, index) => line === probe[index]))
      return new Map(known.read);
    const read = await this.readLines(image, new Map(), recognizer, 'screening', probe);
    this.probes.set(regions, { image, probe, read });
    return new Map(read);
  }

  /**
   * Whether the screening probe reads the page as print at `printedAbove` or more, its writing
   * along the page. Such a page lies upright: turned, its probe reads as noise (on the 62 fixture
   * and val pages PP-OCRv4 read it at 0.687 at most turned by 180°, at 0.882 turned by a quarter;
   * docs/recognition.md, "Pages upside down or sideways"). The probe is the one read() reads next
   * (screeningProbe), so asking costs a printed page nothing and spares it the turn check.
   */
  private async surelyPrinted(image: RgbImage, regions: readonly LayoutRegion[]): Promise<boolean> {
    if (!this.screening || this.orientation || this.screening.selection.printedAbove === null) return false;
    const { recognizer, selection } = this.screening;
    const lines = regions.flatMap((region) => region.lines);
    const widths = lineWidths(lines);
    if (lines.length === 0 || !writesAlong(lines, widths)) return false;
    const probe = probeLines(widths, selection.probeLines).map((index) => lines[index]);
    return probeSurelyPrinted(charactersOf(await this.screeningProbe(image, regions, recognizer, probe)), selection);
  }

  /** Each chosen line read by `recognizer`, its pieces turned by 180° where `flipOf` says. */
  private async readLines(
    image: RgbImage,
    flipOf: ReadonlyMap<DetectedBox, boolean>,
    recognizer: LineRecognizer,
    which: PieceReading['recognizer'],
    chosen: readonly LayoutLine[],
    pageText: readonly string[] = [],
  ): Promise<Map<LayoutLine, PieceReading[]>> {
    if (recognizer.spec.readWholeLines) {
      // One crop per line; its reading goes to the first piece, the others read nothing.
      const whole = chosen.map((line) => enclosingRect(line.fragments, line.angle));
      const read = await recognizer.read(
        image,
        whole,
        this.gate,
        chosen.map((line) => flipOf.get(line.fragments[0]) ?? false),
        recognizer.decoder,
        pageText,
      );
      return new Map(
        chosen.map((line, index) => [
          line,
          line.fragments.map((_, piece) => ({
            crop: read[index].crop,
            characters: piece === 0 ? read[index].characters : [],
            ...(piece === 0 && read[index].frames ? { frames: read[index].frames } : {}),
            ...(piece === 0 && read[index].competing ? { competing: read[index].competing } : {}),
            recognizer: which,
          })),
        ]),
      );
    }
    const batch = chosen.flatMap((line) => line.fragments);
    const read = await recognizer.read(
      image,
      batch,
      this.gate,
      batch.map((piece) => flipOf.get(piece) ?? false),
      recognizer.decoder,
      pageText,
    );
    const byLine = new Map<LayoutLine, PieceReading[]>();
    let next = 0;
    for (const line of chosen) {
      byLine.set(
        line,
        line.fragments.map(() => ({ ...read[next++], recognizer: which })),
      );
    }
    return byLine;
  }

  /**
   * The page turned upright, with its layout: as it lies unless another side reads surer
   * (recognition/page-turn.ts). The main recognizer reads the middle of the widest lines of a
   * layout as they lie and turned by 180°, greedily (a quick look).
   */
  async upright(
    image: RgbImage,
    regions: readonly LayoutRegion[],
    reading = false,
  ): Promise<{ turn: PageTurn; image: RgbImage; regions: readonly LayoutRegion[] }> {
    if (reading && (await this.surelyPrinted(image, regions))) return { turn: 0, image, regions };
    const sides = await this.readSides(image, regions, 0);
    let quarter: { image: RgbImage; regions: readonly LayoutRegion[] } | null = null;
    if (quarterTurnsWorthTrying(sides)) {
      const turned = turnedBy(image, 90);
      // The segmenter alone: where it finds no line on the page turned (as on most upright pages
      // turned sideways), the detector would take 60-600 ms to find pieces that tell little.
      const quarterRegions = this.segmentation ? await this.segmentedLayout(turned) : await this.layout(turned);
      quarter = { image: turned, regions: quarterRegions ?? [] };
      sides.push(...(await this.readSides(quarter.image, quarter.regions, 90)));
    }
    const turn = likeliestTurn(sides);
    if (turn === 0) return { turn, image, regions };
    if (turn === 90 && quarter) return { turn, ...quarter };
    const turned = turnedBy(image, turn);
    return { turn, image: turned, regions: await this.layout(turned) };
  }

  /** The two sides one layout tells (`turn` and `turn` + 180°), or none when its writing runs across the page. */
  private async readSides(image: RgbImage, regions: readonly LayoutRegion[], turn: 0 | 90): Promise<SideReading[]> {
    const lines = regions.flatMap((region) => region.lines);
    const widths = lineWidths(lines);
    if (!writesAlong(lines, widths)) return [];
    const probe = probeLines(widths, TURN_PROBE_LINES).map((index) => probeSpan(enclosingRect(lines[index].fragments, lines[index].angle)));
    const flips = [...probe.map(() => false), ...probe.map(() => true)];
    const read = await this.main.read(image, [...probe, ...probe], this.gate, flips, 'greedy');
    const mean = (from: number): number =>
      read.slice(from, from + probe.length).reduce((sum, piece) => sum + lineConfidence([piece.characters]), 0) / probe.length;
    return [
      { turn, confidence: mean(0) },
      { turn: turn === 0 ? 180 : 270, confidence: mean(probe.length) },
    ];
  }

  /**
   * An engine that reads lines with another recognizer (an account's trained model,
   * models/trained-recognizer.ts) and shares everything else with this one: the detector, the
   * segmenter, the print screening and print reader, the orientation model and the bound on model runs at once, so a
   * process holding several trained models loads each recognizer alone and runs no more at once.
   * Its close() releases its recognizer only; this engine must outlive it.
   */
  async withRecognizer(spec: ModelSpec): Promise<OcrEngine> {
    const main = await LineRecognizer.load({
      source: spec.recognitionSource,
      recognition: spec.recognition,
      languageModel: spec.languageModel,
      decoder: this.settings.decoder ?? 'greedy',
      threads: this.settings.threads,
    });
    return new OcrEngine(
      spec,
      this.settings,
      { detection: this.detection, segmentation: this.segmentation, main, screening: this.screening, orientation: this.orientation },
      { gate: this.gate },
    );
  }

  async close(): Promise<void> {
    if (!this.ownsSharedParts) {
      await this.main.close();
      return;
    }
    await Promise.all([
      this.detection.release(),
      this.segmentation?.release(),
      this.main.close(),
      this.screening?.recognizer.close(),
      this.screening?.print?.close(),
      this.orientation?.release(),
    ]);
  }
}
