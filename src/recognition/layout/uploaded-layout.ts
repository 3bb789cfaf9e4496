// A page layout brought by the client: a PageXML (2013, 2019) or ALTO (v2-v4) file with the
// page's regions, lines (polygon, baseline) and reading order. The file is untrusted input:
// read with the strict reader (no DTD, so no external entities or entity expansion; bounded
// depth and element count), size-limited, its coordinates scaled from the page size it
// declares to the image's and clamped to the image. Anything unusable is a LayoutError with
// a stable code (docs/intake.md, "Bring your own layout").
import { CodedError, type ErrorCatalog } from '../../../domain/errors.ts';
import type { Point } from '../page/page-result.ts';
import { boundingBox } from '../page/geometry.ts';
import { outlinedLine } from './outlined-line.ts';
import type { LayoutRegion } from './reading-order.ts';
import { childNamed, childrenNamed, descendantsNamed, parseXml, XmlError, type XmlElement } from './xml-reader.ts';

/** Largest layout file accepted (bytes). */
export const MAX_LAYOUT_BYTES = 16 * 1024 * 1024;
/** Most text lines one layout file may hold. */
export const MAX_LAYOUT_LINES = 20_000;
/** Most text regions (PageXML TextRegion, ALTO TextBlock) one layout file may hold: no more than lines make sense. */
export const MAX_LAYOUT_REGIONS = 20_000;
/** Most coordinate points in one layout file (all polygons and baselines together). */
export const MAX_LAYOUT_POINTS = 2_000_000;

/**
 * The codes of an unusable layout file: the same codes, with the same 400, as the upload's
 * (src/intake/intake-error.ts), which refuses such a file before a job exists; never retryable.
 */
export const LAYOUT_ERRORS = {
  /** Larger than MAX_LAYOUT_BYTES, or more lines or points than the limits. */
  layout_too_large: { status: 400, retryable: false },
  /** A DOCTYPE or entity declaration (DTDs, external entities are never read). */
  layout_unsafe_xml: { status: 400, retryable: false },
  /** Not well-formed UTF-8 XML, not PageXML or ALTO of a supported version, or coordinates that are not numbers. */
  layout_invalid: { status: 400, retryable: false },
  /** The page size the file declares has another shape than the image (a file for another image). */
  layout_size_mismatch: { status: 400, retryable: false },
  /** A line lies wholly outside the image. */
  layout_outside_image: { status: 400, retryable: false },
} as const satisfies ErrorCatalog<string, 400>;
export type LayoutErrorCode = keyof typeof LAYOUT_ERRORS;

export class LayoutError extends CodedError<LayoutErrorCode, 400> {
  constructor(code: LayoutErrorCode, message: string) {
    super(code, LAYOUT_ERRORS[code], message);
    this.name = 'LayoutError';
  }
}

export function isLayoutError(error: unknown): error is LayoutError {
  return error instanceof LayoutError;
}

export type LayoutFormat = 'page-2013' | 'page-2019' | 'alto-v2' | 'alto-v3' | 'alto-v4';

export interface UploadedLine {
  id: string;
  /** Outline in image pixels, clamped to the image (at least 3 points). */
  polygon: Point[];
  /** Left-to-right baseline in image pixels, clamped; empty when the file has none. */
  baseline: Point[];
  /**
   * The transcription the file carries, as written (not normalised): PageXML's line
   * TextEquiv/Unicode (the lowest @index; the line's Words' joined by spaces when the line has
   * none), ALTO's String@CONTENT joined by spaces. The ground truth of a training
   * (src/intake/ground-truth-zip.ts) and of evaluations; a job's recognition ignores it.
   */
  text: string;
}

/** Why a line of the file was left out. */
export type LeftOutReason = 'no_geometry' | 'outside_image' | 'no_area';

/** A line of the file that is not in the layout, with why (and its text, for counting ground truth). */
export interface LeftOutLine {
  id: string;
  reason: LeftOutReason;
  text: string;
}

export interface LayoutReadOptions {
  /**
   * A line wholly outside the image: `refuse` (the default: a job's layout that does not fit its
   * image is another image's, LayoutError layout_outside_image) or `skip` (left out and listed in
   * `leftOut`: ground truth keeps its other lines).
   */
  outsideImage?: 'refuse' | 'skip';
}

export interface UploadedRegion {
  id: string;
  /** PAGE @type or custom structure type; ALTO has none here. */
  type: string | null;
  /** Clamped outline; empty when the file gives none. */
  polygon: Point[];
  lines: UploadedLine[];
}

export interface UploadedLayout {
  format: LayoutFormat;
  /** Regions in reading order, each with its lines in order. */
  regions: UploadedRegion[];
  /** Lines left out (no usable geometry), with why. */
  warnings: string[];
  /** The same lines, each with its reason and text. */
  leftOut: LeftOutLine[];
}

export interface ImageSize {
  width: number;
  height: number;
}

/** Reads and checks a layout file against the page image it belongs to. */
export function parseUploadedLayout(bytes: Uint8Array | string, image: ImageSize, options: LayoutReadOptions = {}): UploadedLayout {
  const size = typeof bytes === 'string' ? Buffer.byteLength(bytes) : bytes.byteLength;
  if (size > MAX_LAYOUT_BYTES)
    throw new LayoutError('layout_too_large', `the layout file is ${size} bytes; at most ${MAX_LAYOUT_BYTES} are accepted`);
  const source = typeof bytes === 'string' ? bytes : decodeUtf8(bytes);
  const declared = /^\uFEFF?<\?xml[^>]*encoding\s*=\s*["']([^"']+)["']/.exec(source)?.[1];
  if (declared && !/^(utf-?8|us-ascii)$/i.test(declared))
    throw new LayoutError('layout_invalid', `the layout file declares encoding ${declared}; only UTF-8 is accepted`);
  let root: XmlElement;
  try {
    root = parseXml(source, { maxDepth: 64, maxElements: 4 * MAX_LAYOUT_LINES + 500_000 });
  } catch (error) {
    if (error instanceof XmlError)
      throw new LayoutError(error.dtd ? 'layout_unsafe_xml' : 'layout_invalid', `the layout file is not accepted XML: ${error.message}`);
    throw error;
  }
  const namespace = root.attributes[root.name.includes(':') ? `xmlns:${root.name.split(':')[0]}` : 'xmlns'] ?? '';
  const reader = new Reader(image, options.outsideImage ?? 'refuse');
  let format: LayoutFormat;
  let regions: UploadedRegion[];
  if (root.localName === 'PcGts') {
    const version = /primaresearch\.org\/PAGE\/gts\/pagecontent\/(\d{4})-\d\d-\d\d/.exec(namespace)?.[1];
    if (version !== '2013' && version !== '2019') {
      throw new LayoutError(
        'layout_invalid',
        `PageXML namespace ${JSON.stringify(namespace)} is not supported; PAGE 2013-07-15 and 2019-07-15 are`,
      );
    }
    format = version === '2013' ? 'page-2013' : 'page-2019';
    regions = reader.page(root);
  } else if (root.localName === 'alto') {
    const version = /loc\.gov\/standards\/alto\/ns-v([234])#?/.exec(namespace)?.[1];
    if (!version)
      throw new LayoutError('layout_invalid', `ALTO namespace ${JSON.stringify(namespace)} is not supported; ALTO v2, v3 and v4 are`);
    format = `alto-v${version}` as LayoutFormat;
    regions = reader.alto(root);
  } else {
    throw new LayoutError(
      'layout_invalid',
      `the layout file's root element is <${root.name}>; PageXML (<PcGts>) or ALTO (<alto>) is expected`,
    );
  }
  return { format, regions, warnings: reader.warnings, leftOut: reader.leftOut };
}

function decodeUtf8(bytes: Uint8Array): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new LayoutError('layout_invalid', 'the layout file is not UTF-8 text');
  }
}

class Reader {
  readonly warnings: string[] = [];
  readonly leftOut: LeftOutLine[] = [];
  private scaleX = 1;
  private scaleY = 1;
  private points = 0;
  private lines = 0;
  private readonly image: ImageSize;
  private readonly outsideImage: 'refuse' | 'skip';

  constructor(image: ImageSize, outsideImage: 'refuse' | 'skip') {
    this.image = image;
    this.outsideImage = outsideImage;
  }

  page(root: XmlElement): UploadedRegion[] {
    const page = childNamed(root, 'Page');
    if (!page) throw new LayoutError('layout_invalid', 'the PageXML file has no <Page>');
    this.declareSize(number(page.attributes.imageWidth), number(page.attributes.imageHeight));
    const regions = this.limitRegions(descendantsNamed(page, 'TextRegion'));
    const order = descendantsNamed(page, 'RegionRefIndexed')
      .sort((a, b) => Number(a.attributes.index) - Number(b.attributes.index))
      .map((ref) => ref.attributes.regionRef);
    const byId = new Map(regions.map((region) => [region.attributes.id, region]));
    const ordered = [...new Set(order)].map((id) => byId.get(id)).filter((region): region is XmlElement => region !== undefined);
    const placed = new Set(ordered);
    const rest = regions.filter((region) => !placed.has(region));
    return [...ordered, ...rest].map((region, index) => {
      const id = region.attributes.id ?? `r${index + 1}`;
      const custom = /structure\s*\{[^}]*type:\s*([^;}]+)/.exec(region.attributes.custom ?? '')?.[1]?.trim();
      return {
        id,
        type: region.attributes.type ?? custom ?? null,
        polygon: this.clamp(this.pagePoints(childNamed(region, 'Coords'), `region ${id}`)),
        lines: this.lines_(
          childrenNamed(region, 'TextLine').map((line, lineIndex) => {
            const lineId = line.attributes.id ?? `${id}_l${lineIndex + 1}`;
            return {
              id: lineId,
              polygon: this.pagePoints(childNamed(line, 'Coords'), `line ${lineId}`),
              baseline: this.pagePoints(childNamed(line, 'Baseline'), `line ${lineId}`),
              text: pageText(line),
            };
          }),
        ),
      };
    });
  }

  alto(root: XmlElement): UploadedRegion[] {
    const layout = childNamed(root, 'Layout');
    const page = layout ? childNamed(layout, 'Page') : undefined;
    if (!page) throw new LayoutError('layout_invalid', 'the ALTO file has no <Layout><Page>');
    const description = childNamed(root, 'Description');
    const unit = (description && childNamed(description, 'MeasurementUnit')?.text.trim()) || 'pixel';
    const width = number(page.attributes.WIDTH);
    const height = number(page.attributes.HEIGHT);
    if (unit !== 'pixel') {
      if (!(width > 0 && height > 0))
        throw new LayoutError('layout_invalid', `the ALTO file measures in ${unit} but its <Page> has no WIDTH and HEIGHT to scale from`);
    }
    this.declareSize(width, height);
    return this.limitRegions(descendantsNamed(page, 'TextBlock')).map((block, index) => {
      const id = block.attributes.ID ?? `r${index + 1}`;
      return {
        id,
        type: null,
        polygon: this.clamp(this.altoPolygon(block, `block ${id}`)),
        lines: this.lines_(
          childrenNamed(block, 'TextLine').map((line, lineIndex) => {
            const lineId = line.attributes.ID ?? `${id}_l${lineIndex + 1}`;
            return {
              id: lineId,
              polygon: this.altoPolygon(line, `line ${lineId}`),
              baseline: this.altoBaseline(line, `line ${lineId}`),
              text: altoText(line),
            };
          }),
        ),
      };
    });
  }

  private limitRegions(regions: XmlElement[]): XmlElement[] {
    if (regions.length > MAX_LAYOUT_REGIONS)
      throw new LayoutError(
        'layout_too_large',
        `the layout file has ${regions.length} text regions; at most ${MAX_LAYOUT_REGIONS} are accepted`,
      );
    return regions;
  }

  /** Scale from the page size the file declares to the image (only when it declares one). */
  private declareSize(width: number, height: number): void {
    if (!(width > 0 && height > 0)) return;
    this.scaleX = this.image.width / width;
    this.scaleY = this.image.height / height;
    if (Math.abs(this.scaleX / this.scaleY - 1) > 0.05) {
      throw new LayoutError(
        'layout_size_mismatch',
        `the layout file describes a ${width}×${height} page but the image is ${this.image.width}×${this.image.height}: another shape (is it the layout of another image, or of the image turned?)`,
      );
    }
  }

  /** Scaled, checked, clamped lines; lines without usable geometry are left out with a warning. */
  private lines_(raw: { id: string; polygon: Point[]; baseline: Point[]; text: string }[]): UploadedLine[] {
    const lines: UploadedLine[] = [];
    for (const line of raw) {
      this.lines += 1;
      if (this.lines > MAX_LAYOUT_LINES)
        throw new LayoutError('layout_too_large', `the layout file has more than ${MAX_LAYOUT_LINES} text lines`);
      let polygon = line.polygon;
      if (polygon.length < 3 && line.baseline.length >= 2) polygon = bandAround(line.baseline, this.image);
      if (polygon.length < 3) {
        this.leaveOut(line, 'no_geometry', `layout line ${line.id} has no outline or baseline; left out`);
        continue;
      }
      const box = boundingBox(polygon);
      if (box.x >= this.image.width || box.y >= this.image.height || box.x + box.width <= 0 || box.y + box.height <= 0) {
        const outside = `layout line ${line.id} lies outside the ${this.image.width}×${this.image.height} image`;
        if (this.outsideImage === 'refuse') throw new LayoutError('layout_outside_image', outside);
        this.leaveOut(line, 'outside_image', `${outside}; left out`);
        continue;
      }
      const clamped = this.clamp(polygon);
      const clampedBox = boundingBox(clamped);
      if (clampedBox.width < 1 || clampedBox.height < 1) {
        this.leaveOut(line, 'no_area', `layout line ${line.id} has no area inside the image; left out`);
        continue;
      }
      lines.push({ id: line.id, polygon: clamped, baseline: this.clamp(line.baseline), text: line.text });
    }
    return lines;
  }

  private leaveOut(line: { id: string; text: string }, reason: LeftOutReason, warning: string): void {
    this.warnings.push(warning);
    this.leftOut.push({ id: line.id, reason, text: line.text });
  }

  private clamp(points: Point[]): Point[] {
    const { width, height } = this.image;
    return points.map(([x, y]) => [Math.round(Math.min(Math.max(x, 0), width)), Math.round(Math.min(Math.max(y, 0), height))] as const);
  }

  private parsePoints(text: string, what: string): Point[] {
    const numbers =
      text.trim() === ''
        ? []
        : text
            .trim()
            .split(/[\s,]+/)
            .map(Number);
    if (numbers.length % 2 !== 0 || numbers.some((value) => !Number.isFinite(value))) {
      throw new LayoutError('layout_invalid', `${what}: coordinates ${JSON.stringify(text.slice(0, 80))} are not pairs of numbers`);
    }
    this.points += numbers.length / 2;
    if (this.points > MAX_LAYOUT_POINTS)
      throw new LayoutError('layout_too_large', `the layout file has more than ${MAX_LAYOUT_POINTS} coordinate points`);
    const points: Point[] = [];
    for (let index = 0; index + 1 < numbers.length; index += 2)
      points.push([numbers[index] * this.scaleX, numbers[index + 1] * this.scaleY]);
    return points;
  }

  private pagePoints(coords: XmlElement | undefined, what: string): Point[] {
    if (!coords) return [];
    if (coords.attributes.points !== undefined) return this.parsePoints(coords.attributes.points, what);
    // PAGE 2010 style: <Point x= y=/> children.
    return this.parsePoints(
      childrenNamed(coords, 'Point')
        .map((point) => `${point.attributes.x},${point.attributes.y}`)
        .join(' '),
      what,
    );
  }

  private altoBox(element: XmlElement, what: string): Point[] {
    const [x, y, width, height] = ['HPOS', 'VPOS', 'WIDTH', 'HEIGHT'].map((name) => element.attributes[name]);
    if ([x, y, width, height].some((value) => value === undefined)) return [];
    const [left, top] = this.parsePoints(`${x} ${y}`, what)[0];
    const [right, bottom] = this.parsePoints(`${Number(x) + Number(width)} ${Number(y) + Number(height)}`, what)[0];
    return [
      [left, top],
      [right, top],
      [right, bottom],
      [left, bottom],
    ];
  }

  private altoPolygon(element: XmlElement, what: string): Point[] {
    const shape = childNamed(element, 'Shape');
    const polygon = shape ? childNamed(shape, 'Polygon') : undefined;
    if (polygon?.attributes.POINTS !== undefined) {
      const points = this.parsePoints(polygon.attributes.POINTS, what);
      if (points.length >= 3) return points;
    }
    return this.altoBox(element, what);
  }

  private altoBaseline(line: XmlElement, what: string): Point[] {
    const baseline = (line.attributes.BASELINE ?? '').trim();
    if (baseline === '') return [];
    // ALTO 4.2+: a polyline "x1,y1 x2,y2"; before: a single y.
    if (/[\s,]/.test(baseline)) return this.parsePoints(baseline, what);
    const box = this.altoBox(line, what);
    if (box.length === 0) return [];
    const [y] = [Number(baseline) * this.scaleY];
    if (!Number.isFinite(y))
      throw new LayoutError('layout_invalid', `${what}: BASELINE ${JSON.stringify(baseline.slice(0, 80))} is not a number`);
    return [
      [box[0][0], y],
      [box[1][0], y],
    ];
  }
}

function number(value: string | undefined): number {
  return value === undefined ? NaN : Number(value);
}

function pageText(element: XmlElement): string {
  const own = textEquiv(element);
  if (own !== null) return own;
  // A line transcribed word by word only (some tools write no line-level TextEquiv).
  const words = childrenNamed(element, 'Word')
    .map((word) => textEquiv(word) ?? '')
    .filter((word) => word !== '');
  return words.join(' ');
}

/** The Unicode of the element's own TextEquiv with the lowest @index; null when it has none. */
function textEquiv(element: XmlElement): string | null {
  const equivs = childrenNamed(element, 'TextEquiv').sort((a, b) => Number(a.attributes.index ?? 0) - Number(b.attributes.index ?? 0));
  const unicode = equivs[0] ? childNamed(equivs[0], 'Unicode') : undefined;
  return unicode ? unicode.text : null;
}

function altoText(line: XmlElement): string {
  const parts: string[] = [];
  for (const child of line.children) {
    if (child.localName === 'String') parts.push(child.attributes.CONTENT ?? '');
    else if (child.localName === 'SP') parts.push(' ');
    else if (child.localName === 'HYP') parts.push(child.attributes.CONTENT ?? '-');
  }
  // Strings without SP between them are still words apart.
  return parts.join(' ').replace(/\s+/g, ' ').trim();
}

/** A line with only a baseline: a band from 3/4 of a line height above it to 1/4 below. */
function bandAround(baseline: Point[], image: ImageSize): Point[] {
  const height = Math.max(8, Math.round(Math.max(image.width, image.height) / 50));
  return [
    ...baseline.map(([x, y]): Point => [x, y - height * 0.75]),
    ...[...baseline].reverse().map(([x, y]): Point => [x, y + height * 0.25]),
  ];
}

/** The uploaded layout as the engine's layout (regions of lines in reading order), each line one piece (outlined-line.ts). */
export function layoutRegionsOf(layout: UploadedLayout): LayoutRegion[] {
  return layout.regions.map((region) => ({
    type: region.type === 'marginalia' ? 'marginalia' : 'paragraph',
    lines: region.lines.map((line) => outlinedLine(line.polygon, line.baseline)),
  }));
}
