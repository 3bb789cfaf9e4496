// The page model: the one contract between recognition, correction and export.
// A page task produces exactly one PageResult per page image; correction rewrites
// line and word texts in place (keeping geometry); export reads nothing else.

/** A pixel coordinate in the full-resolution, orientation-corrected page image. */
export type Point = readonly [x: number, y: number];

export interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface Word {
  id: string;
  text: string;
  /** Axis-aligned box in page pixels; always inside the line's bounding box. */
  box: Box;
  /** Optional tighter polygon (e.g. for slanted lines). */
  polygon?: Point[];
  /** 0..1 */
  confidence: number;
  /**
   * Other readings the decoder held for the word (at most 3, likeliest first), each with the
   * probability that it is the word (0..1, below the word's own): reading/word-alternatives.ts.
   */
  alternatives?: WordAlternative[];
}

export interface WordAlternative {
  text: string;
  confidence: number;
}

export interface TextLine {
  id: string;
  polygon: Point[];
  /** Left-to-right polyline along the bottom of the writing (PAGE/ALTO baseline). */
  baseline: Point[];
  text: string;
  /** 0..1, mean of character confidences. */
  confidence: number;
  words: Word[];
  /** Text as the recognizer read it, kept when a later step (correction) changed `text`. */
  recognizedText?: string;
}

export interface TextRegion {
  id: string;
  polygon: Point[];
  /** Lines in reading order. */
  lines: TextLine[];
  /** e.g. 'paragraph', 'marginalia' (PAGE TextRegion @type). */
  type?: string;
}

export interface SourceImage {
  /** File name as in the submitted ZIP (path inside the ZIP). */
  name: string;
  width: number;
  height: number;
  sha256: string;
  /** Detected image format: 'jpeg' | 'png' | 'tiff' | 'webp' | ... */
  format: string;
  /** Resolution in dots per inch when the file declares it. */
  dpi: number | null;
}

export interface ModelInfo {
  role: 'detection' | 'recognition' | 'orientation' | 'correction';
  name: string;
  version: string;
}

export interface CorrectionInfo {
  provider: string;
  model: string;
  /** Lines whose correction was refused by a guard, with the reason. */
  refusedLines: { id: string; reason: string }[];
  inputTokens: number;
  outputTokens: number;
  /**
   * 'applied': the answer passed the guards (some lines may still be refused);
   * 'rejected': the answer was malformed twice, the recognised text was kept;
   * 'unavailable': the provider could not be reached, the recognised text was kept.
   */
  outcome?: 'applied' | 'rejected' | 'unavailable';
}

export interface PageResult {
  schema: 'hwr.page-result/1';
  /** 1-based position of the page in the job. */
  pageNumber: number;
  image: SourceImage;
  /** Regions in reading order. */
  regions: TextRegion[];
  producer: {
    software: string;
    version: string;
    models: ModelInfo[];
  };
  correction?: CorrectionInfo;
  /**
   * The clockwise turn that makes the page upright, when it was scanned sideways (90, 270) or upside
   * down (180) and read turned upright; its coordinates stay in the image as sent. Absent: upright.
   */
  orientation?: 90 | 180 | 270;
  /** Where the regions and lines came from: absent or 'detected' = our layout; 'uploaded' = the page's own PageXML/ALTO from the ZIP. */
  layoutSource?: 'detected' | 'uploaded';
  /** Human-readable notes (e.g. "correction skipped: no provider configured"). */
  warnings: string[];
}

export function allLines(page: PageResult): TextLine[] {
  return page.regions.flatMap((region) => region.lines);
}

export function pageText(page: PageResult): string {
  return allLines(page)
    .map((line) => line.text)
    .join('\n');
}
