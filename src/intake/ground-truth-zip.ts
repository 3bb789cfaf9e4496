// Intake of a ground-truth ZIP (POST /v1/models, docs/models.md "Ground truth"): page images with
// their PageXML (2013, 2019) or ALTO (v2-v4) files carrying each line's outline and text. The ZIP
// passes every check a scan's does (scan-zip.ts: size, entry count, paths, encryption, compression,
// bombs, CRCs, images by content; the layout reader's XML safety), then:
//
// - A layout file pairs with its image by name, as a scan's uploaded layouts do (`p1.xml` beside
//   `p1.jpg`), and also the way exports lay them out: by the image the file names
//   (PageXML `Page@imageFilename`, ALTO `sourceImageInformation/fileName`) beside it or one folder
//   up (Transkribus: `doc/page/p1.xml` names `p1.jpg` in `doc/`; our result archive:
//   `page/0001_p1.xml` names the submitted `scans/p1.jpg`), or by its own name one folder up.
//   Other XML files (METS, Transkribus' metadata.xml and doc.xml) and files that are neither
//   images nor XML (our archive's text, PDF, manifest) are ignored and said in the warnings. An
//   image described by a PageXML and an ALTO file (our archive has both) is read from the PageXML.
// - Every image needs its layout (page_without_layout); a layout naming no image in the ZIP is
//   refused (layout_unmatched).
// - Lines without text, without geometry, outside the image, too small to read or with characters
//   no model can learn are left out and counted; too many with such characters, no usable line
//   at all, or fewer than MIN_TRAINING_LINES are refused (ground-truth-error.ts).
//
// What is kept goes into the blob store under `keyPrefix`: the page images, their layout files as
// uploaded, and the ground truth document (ground-truth.ts). A refusal deletes the prefix.
import path from 'node:path';
import { Readable } from 'node:stream';
import type { ZipFile } from 'yauzl';
import type { GroundTruthSkips } from '../../domain/events.ts';
import type { BlobStore } from '../blobs/blob-store.ts';
import type { Config } from '../platform/config.ts';
import { isLayoutError } from '../recognition/layout/uploaded-layout.ts';
import { readUploadedLayout } from '../recognition/layout/uploaded-layout-thread.ts';
import { sortPathsNaturally } from '../shared/natural-sort.ts';
import { GROUND_TRUTH_FORMAT, type GroundTruthDocument, type GroundTruthLine, type GroundTruthPage } from './ground-truth.ts';
import { GroundTruthError } from './ground-truth-error.ts';
import { codePointName, normaliseLineText, tooSmallToRead } from './ground-truth-text.ts';
import { IntakeError, quoteName } from './intake-error.ts';
import { type Candidate, entryReadError, inflateLayout, openEntryStream, openUploadedZip, readCandidates, storePage } from './scan-zip.ts';

/** The fewest usable lines a training takes (docs/decisions/0028-ground-truth-intake.md). */
export const MIN_TRAINING_LINES = 20;
/** From this share of the lines with text carrying unlearnable characters on, the upload is refused instead of those lines left out. */
export const UNLEARNABLE_REFUSAL_SHARE = 0.1;
/** Bytes of an XML entry read to tell a layout from other XML and find the image it names. */
const XML_HEAD_BYTES = 256 * 1024;
/** Names listed in one warning or refusal, at most. */
const NAMES_SHOWN = 5;

/** Paths that are images by their extension (their content is checked as a scan page's is when they are read). */
const IMAGE_PATH = /\.(jpe?g|jpe|jfif|png|tiff?|webp|jp2|j2k|jpf|jpx|jpc|j2c|gif|bmp|heic|heif|avif|jxl)$/i;
const XML_PATH = /\.xml$/i;

export interface GroundTruthIntakeOptions {
  limits: Config['limits'];
  blobs: BlobStore;
  /** Where the pages, their layout files and the ground truth go, e.g. `models/<id>/ground-truth`; deleted again on a refusal. */
  keyPrefix: string;
  /** The upload's name in error details (the client's file name, or the form field). */
  uploadName?: string;
  signal?: AbortSignal;
}

export interface GroundTruthIntake {
  /** Where the ground truth document is stored (ground-truth.ts). */
  key: string;
  pagesTotal: number;
  /** Usable lines: what training gets. */
  linesTotal: number;
  linesSkipped: GroundTruthSkips;
  warnings: string[];
}

type LayoutKind = 'PageXML' | 'ALTO';

interface LayoutEntry {
  candidate: Candidate;
  kind: LayoutKind;
  /** The image the file names, as written; null when it names none (in its first XML_HEAD_BYTES). */
  imageName: string | null;
}

interface PlannedPage {
  image: Candidate;
  layout: LayoutEntry;
}

export async function intakeGroundTruthZip(zipPath: string, options: GroundTruthIntakeOptions): Promise<GroundTruthIntake> {
  const { limits, signal } = options;
  const uploadName = options.uploadName ?? 'training_zip';
  signal?.throwIfAborted();
  const { zip, size } = await openUploadedZip(zipPath, limits, uploadName);
  try {
    const entries = await readCandidates(zip, limits, uploadName, size);
    const progress = { inflatedBytes: 0, archiveBytes: size };
    const warnings: string[] = [];
    const pages = await planPages(zip, entries, uploadName, warnings, signal);
    if (pages.length > limits.maxPages) {
      throw new IntakeError(
        'too_many_pages',
        `${quoteName(uploadName)} has ${pages.length} page images; at most ${limits.maxPages} pages are accepted in one upload`,
        { setting: 'MAX_PAGES' },
      );
    }
    try {
      return await storeGroundTruth(zip, pages, { ...options, uploadName }, progress, warnings);
    } catch (error) {
      await options.blobs.deletePrefix(options.keyPrefix).catch(() => undefined);
      throw error;
    }
  } finally {
    zip.close();
  }
}

/** Pairs every image with its layout file; adds what was ignored or chosen to `warnings`. */
async function planPages(
  zip: ZipFile,
  entries: Candidate[],
  uploadName: string,
  warnings: string[],
  signal: AbortSignal | undefined,
): Promise<PlannedPage[]> {
  const images = entries.filter((entry) => IMAGE_PATH.test(entry.path));
  const xmls = entries.filter((entry) => XML_PATH.test(entry.path));
  const others = entries.filter((entry) => !IMAGE_PATH.test(entry.path) && !XML_PATH.test(entry.path));
  const layouts: LayoutEntry[] = [];
  const otherXml: string[] = [];
  for (const candidate of xmls) {
    signal?.throwIfAborted();
    const sniffed = sniffLayout(await readHead(zip, candidate, XML_HEAD_BYTES));
    if (sniffed.kind === null) otherXml.push(candidate.path);
    else layouts.push({ candidate, kind: sniffed.kind, imageName: sniffed.imageName });
  }
  if (otherXml.length > 0) warnings.push(`ignored ${count(otherXml.length, 'XML file')} not PageXML or ALTO: ${names(otherXml)}`);
  if (others.length > 0) {
    const paths = others.map((entry) => entry.path);
    warnings.push(`ignored ${count(paths.length, 'file')} neither page images nor XML: ${names(paths)}`);
  }
  if (images.length === 0) {
    throw new IntakeError(
      'no_images',
      `${quoteName(uploadName)} contains no page images (JPEG, PNG, TIFF, WebP or JPEG 2000 files beside their PageXML or ALTO)`,
    );
  }

  const pairing = new ImagePairing(images);
  const byImage = new Map<Candidate, LayoutEntry[]>();
  for (const layout of layouts) {
    const image = pairing.imageOf(layout);
    byImage.set(image, [...(byImage.get(image) ?? []), layout]);
  }
  const unpaired = images.filter((image) => !byImage.has(image)).map((image) => image.path);
  if (unpaired.length > 0) {
    throw new GroundTruthError(
      'page_without_layout',
      `${unpaired.length} page image${unpaired.length > 1 ? 's have' : ' has'} no PageXML or ALTO file: ${names(unpaired)}; ` +
        'each page needs its transcription, beside the image with the same name (or as the export wrote it: the file names its image)',
    );
  }
  const planned: PlannedPage[] = [];
  for (const image of sortPathsNaturally(images, (candidate) => candidate.path)) {
    const described = byImage.get(image) ?? [];
    const chosen = described.find((layout) => layout.kind === 'PageXML') ?? described[0];
    const sameKind = described.filter((layout) => layout.kind === chosen.kind);
    if (sameKind.length > 1) {
      throw new IntakeError(
        'layout_unmatched',
        `entries ${sameKind.map((layout) => quoteName(layout.candidate.path)).join(' and ')} are all ${chosen.kind} files of ${quoteName(image.path)}; keep one`,
        { entry: sameKind[1].candidate.path },
      );
    }
    for (const other of described.filter((layout) => layout !== chosen)) {
      warnings.push(
        `${quoteName(other.candidate.path)} also describes ${quoteName(image.path)}; its ${chosen.kind} file ${quoteName(chosen.candidate.path)} was read`,
      );
    }
    planned.push({ image, layout: chosen });
  }
  return planned;
}

/** Finds the image a layout file belongs to, by the rules at the top of this file. */
class ImagePairing {
  private readonly byPath = new Map<string, Candidate>();
  private readonly byStem = new Map<string, Candidate[]>();
  private readonly byBaseName = new Map<string, Candidate[]>();

  constructor(images: Candidate[]) {
    for (const image of images) {
      this.byPath.set(image.path, image);
      add(this.byStem, withoutExtension(image.path), image);
      add(this.byBaseName, path.posix.basename(image.path), image);
    }
  }

  imageOf(layout: LayoutEntry): Candidate {
    const { path: layoutPath } = layout.candidate;
    const folder = parentOf(layoutPath);
    const up = parentOf(folder);
    const stem = withoutExtension(path.posix.basename(layoutPath));
    // As a scan's uploaded layouts: the same path but for the extension.
    const beside = this.byStem.get(withoutExtension(layoutPath)) ?? [];
    if (beside.length > 1) {
      throw new IntakeError(
        'layout_unmatched',
        `entry ${quoteName(layoutPath)} could be the layout of ${beside.map((image) => quoteName(image.path)).join(' or ')}; give each image its own name`,
        { entry: layoutPath },
      );
    }
    if (beside.length === 1) return beside[0];
    // The image the file names: beside it, one folder up, from the ZIP's root; then by its file name alone.
    const named = layout.imageName
      ?.replace(/\\/g, '/')
      .replace(/^(\.\/)+/, '')
      .trim();
    if (named) {
      for (const folderOf of [folder, up, '']) {
        const found = this.byPath.get(path.posix.normalize(path.posix.join(folderOf, named)));
        if (found) return found;
      }
      const baseName = path.posix.basename(named);
      for (const folderOf of [folder, up]) {
        const found = this.byPath.get(path.posix.join(folderOf, baseName));
        if (found) return found;
      }
      const anywhere = this.byBaseName.get(baseName) ?? [];
      if (anywhere.length === 1) return anywhere[0];
    }
    // Its own name one folder up (an export's `page/` or `alto/` folder).
    const above = this.byStem.get(path.posix.join(up, stem)) ?? [];
    if (above.length === 1) return above[0];
    const wanted = named ? `the image it names, ${quoteName(named)}, is not in the ZIP` : 'it names no image';
    throw new IntakeError(
      'layout_unmatched',
      `entry ${quoteName(layoutPath)} is a ${layout.kind} file but ${wanted}, and no image ${quoteName(stem)} sits beside it or one folder up`,
      { entry: layoutPath },
    );
  }
}

/** Stores each page and its layout file, reads and checks its lines, writes the ground truth. */
async function storeGroundTruth(
  zip: ZipFile,
  planned: PlannedPage[],
  options: GroundTruthIntakeOptions & { uploadName: string },
  progress: { inflatedBytes: number; archiveBytes: number },
  warnings: string[],
): Promise<GroundTruthIntake> {
  const { blobs, keyPrefix, signal } = options;
  const digits = Math.max(4, String(planned.length).length);
  const skipped: GroundTruthSkips = { noText: 0, noGeometry: 0, outsideImage: 0, tooSmall: 0, unlearnableCharacters: 0 };
  const invisible = new Set<string>();
  let invisibleLines = 0;
  const unlearnable = new Set<string>();
  const unlearnableAt: string[] = [];
  const privateUse = new Set<string>();
  let linesWithText = 0;
  const pages: GroundTruthPage[] = [];
  const emptyPages: string[] = [];

  for (const [index, { image, layout }] of planned.entries()) {
    signal?.throwIfAborted();
    const pageNumber = index + 1;
    const keyStem = `${keyPrefix}/pages/${String(pageNumber).padStart(digits, '0')}`;
    const stored = await storePage(zip, image, pageNumber, keyStem, { ...options, keyPrefix }, progress);
    const layoutPath = layout.candidate.path;
    const xml = await inflateLayout(zip, layout.candidate, options, progress);
    let read: Awaited<ReturnType<typeof readUploadedLayout>>;
    try {
      read = await readUploadedLayout(xml, stored.size, signal, { outsideImage: 'skip' });
    } catch (error) {
      if (isLayoutError(error))
        throw new IntakeError(error.code, `entry ${quoteName(layoutPath)}: ${error.message}`, { entry: layoutPath, cause: error });
      throw error;
    }
    const layoutKey = `${keyStem}.layout.xml`;
    await blobs.put(layoutKey, Readable.from([xml]));

    for (const left of read.leftOut) {
      if (left.reason === 'no_geometry') skipped.noGeometry++;
      else skipped.outsideImage++;
    }
    const lines: GroundTruthLine[] = [];
    for (const line of read.regions.flatMap((region) => region.lines)) {
      const checked = normaliseLineText(line.text);
      if (checked.invisible.length > 0) {
        invisibleLines++;
        for (const character of checked.invisible) invisible.add(character);
      }
      if (checked.text === '') {
        skipped.noText++;
        continue;
      }
      linesWithText++;
      if (checked.unlearnable.length > 0) {
        skipped.unlearnableCharacters++;
        for (const character of checked.unlearnable) unlearnable.add(character);
        if (unlearnableAt.length < NAMES_SHOWN) unlearnableAt.push(`line ${line.id} of ${layoutPath}`);
        continue;
      }
      if (tooSmallToRead(line.polygon, checked.text) !== null) {
        skipped.tooSmall++;
        continue;
      }
      for (const character of checked.privateUse) privateUse.add(character);
      lines.push({ id: line.id, text: checked.text, polygon: line.polygon, baseline: line.baseline });
    }
    if (lines.length === 0) emptyPages.push(image.path);
    pages.push({
      pageNumber,
      name: image.path,
      imageKey: stored.source.blobKey,
      sha256: stored.source.sha256,
      bytes: stored.source.bytes,
      width: stored.size.width,
      height: stored.size.height,
      layoutName: layoutPath,
      layoutKey,
      layoutFormat: read.format,
      lines,
    });
  }

  const linesTotal = pages.reduce((sum, page) => sum + page.lines.length, 0);
  const unlearnableNames = [...unlearnable].map(codePointName).join(', ');
  if (skipped.unlearnableCharacters > 0 && skipped.unlearnableCharacters >= UNLEARNABLE_REFUSAL_SHARE * linesWithText) {
    throw new GroundTruthError(
      'unlearnable_characters',
      `${skipped.unlearnableCharacters} of ${linesWithText} lines with text carry characters no model can learn (${unlearnableNames}: ` +
        `control characters, unassigned code points or U+FFFD, the mark of text decoded in the wrong encoding), first at ` +
        `${unlearnableAt.join('; ')}; export the transcriptions again as UTF-8`,
    );
  }
  if (linesTotal === 0) {
    throw new GroundTruthError('no_usable_lines', `no line of the ${pages.length} pages can be trained on: ${describeSkips(skipped)}`);
  }
  if (linesTotal < MIN_TRAINING_LINES) {
    throw new GroundTruthError(
      'too_few_lines',
      `${linesTotal} usable line${linesTotal > 1 ? 's' : ''} in ${pages.length} page${pages.length > 1 ? 's' : ''}; a training needs at least ${MIN_TRAINING_LINES}` +
        (Object.values(skipped).some((count) => count > 0) ? ` (left out: ${describeSkips(skipped)})` : ''),
    );
  }

  if (skipped.unlearnableCharacters > 0) {
    warnings.push(
      `left out ${skipped.unlearnableCharacters} line${skipped.unlearnableCharacters > 1 ? 's' : ''} with characters no model can learn (${unlearnableNames})`,
    );
  }
  if (invisible.size > 0) {
    warnings.push(
      `removed invisible formatting characters (${[...invisible].map(codePointName).join(', ')}) from the text of ${invisibleLines} line${invisibleLines > 1 ? 's' : ''}`,
    );
  }
  if (privateUse.size > 0) {
    warnings.push(
      `private-use characters (${[...privateUse].map(codePointName).join(', ')}) are learned as they are; they show only in fonts that have them (MUFI's, for instance)`,
    );
  }
  if (emptyPages.length > 0)
    warnings.push(`${emptyPages.length} page${emptyPages.length > 1 ? 's have' : ' has'} no usable line: ${names(emptyPages)}`);

  const characters = [...new Set(pages.flatMap((page) => page.lines.flatMap((line) => [...line.text])))].sort(
    (a, b) => (a.codePointAt(0) ?? 0) - (b.codePointAt(0) ?? 0),
  );
  const document: GroundTruthDocument = { format: GROUND_TRUTH_FORMAT, pages, linesTotal, characters };
  const key = `${keyPrefix}/ground-truth.json`;
  await blobs.put(key, JSON.stringify(document));
  return { key, pagesTotal: pages.length, linesTotal, linesSkipped: skipped, warnings };
}

/** The first `bytes` of an entry, as text (enough to tell what an XML file is and which image it names). */
async function readHead(zip: ZipFile, candidate: Candidate, bytes: number): Promise<string> {
  const stream = await openEntryStream(zip, candidate);
  const chunks: Buffer[] = [];
  let length = 0;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      chunks.push(chunk);
      length += chunk.length;
      if (length >= bytes) break;
    }
  } catch (error) {
    throw entryReadError(error, candidate.path);
  } finally {
    stream.destroy();
  }
  return new TextDecoder('utf-8').decode(Buffer.concat(chunks).subarray(0, bytes));
}

/** Whether an XML file's head is PageXML or ALTO (by its root element), and the image it names. */
export function sniffLayout(head: string): { kind: LayoutKind | null; imageName: string | null } {
  const body = head
    .replace(/^\uFEFF/, '')
    .replace(/<!--[\s\S]*?-->/g, '')
    .replace(/<\?[\s\S]*?\?>/g, '')
    .replace(/<!DOCTYPE[^[>]*(\[[\s\S]*?\])?\s*>/i, '');
  const root = /<(?:[A-Za-z_][\w.-]*:)?([A-Za-z_][\w.-]*)[\s/>]/.exec(body)?.[1];
  if (root === 'PcGts') {
    const page = /<(?:[\w.-]+:)?Page\s[^>]*?\bimageFilename\s*=\s*(?:"([^"]*)"|'([^']*)')/.exec(body);
    return { kind: 'PageXML', imageName: page ? decodeXmlText(page[1] ?? page[2]) : null };
  }
  if (root === 'alto') {
    const file = /<(?:[\w.-]+:)?fileName\s*>([^<]*)</.exec(body);
    return { kind: 'ALTO', imageName: file ? decodeXmlText(file[1]) : null };
  }
  return { kind: null, imageName: null };
}

function decodeXmlText(text: string): string | null {
  const decoded = text
    .replace(/&#x([0-9a-f]{1,6});/gi, (_, hex: string) => safeCodePoint(Number.parseInt(hex, 16)))
    .replace(/&#([0-9]{1,7});/g, (_, decimal: string) => safeCodePoint(Number(decimal)))
    .replace(/&(lt|gt|quot|apos|amp);/g, (_, name: string) => ({ lt: '<', gt: '>', quot: '"', apos: "'", amp: '&' })[name] ?? '')
    .trim();
  return decoded === '' ? null : decoded;
}

function safeCodePoint(value: number): string {
  return value > 0 && value <= 0x10ffff ? String.fromCodePoint(value) : '';
}

function describeSkips(skipped: GroundTruthSkips): string {
  const parts = [
    [skipped.noText, 'without text'],
    [skipped.noGeometry, 'without an outline or baseline'],
    [skipped.outsideImage, 'outside the image'],
    [skipped.tooSmall, 'too small to read'],
    [skipped.unlearnableCharacters, 'with characters no model can learn'],
  ] as const;
  const said = parts.filter(([count]) => count > 0).map(([count, why]) => `${count} line${count > 1 ? 's' : ''} ${why}`);
  return said.length > 0 ? said.join(', ') : 'the layout files have no text lines';
}

/** Up to NAMES_SHOWN of `paths`, quoted, in natural order. */
function names(paths: readonly string[]): string {
  const shown = sortPathsNaturally(paths, (name) => name)
    .slice(0, NAMES_SHOWN)
    .map(quoteName)
    .join(', ');
  return paths.length > NAMES_SHOWN ? `${shown} and ${paths.length - NAMES_SHOWN} more` : shown;
}

/** `1 file that is`, `2 files that are`. */
function count(n: number, noun: string): string {
  return n === 1 ? `1 ${noun} that is` : `${n} ${noun}s that are`;
}

function withoutExtension(filePath: string): string {
  return filePath.replace(/\.[^./]*$/, '');
}

function parentOf(filePath: string): string {
  const parent = path.posix.dirname(filePath);
  return parent === '.' ? '' : parent;
}

function add<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  map.set(key, [...(map.get(key) ?? []), value]);
}
