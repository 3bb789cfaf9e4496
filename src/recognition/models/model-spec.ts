// What a model directory describes, once its manifest is read (model-manifest.ts reads it; the
// format: docs/recognition.md, "The model directory format"): the detection, segmentation,
// recognition, orientation and screening models, how to feed each, the language model and its
// search settings, the selection between two recognizers and the layout values.
import type { BeamSearchOptions } from './beam-search-options.ts';
import type { CalibrationPoints } from './confidence-calibration.ts';
import type { Resampling } from '../image/raster.ts';

/** `languageModel.model` value: choose the file's per-language model that fits each page. */
export const AUTO_LANGUAGE = 'auto';

export type ChannelOrder = 'rgb' | 'bgr';

/** How pixels become the model's input tensor: value = (pixel / 255 - mean[c]) / std[c]. */
export interface InputNormalisation {
  /** 1: grey (luminance), 3: colour in `channelOrder`. */
  channels: 1 | 3;
  channelOrder: ChannelOrder;
  mean: number[];
  std: number[];
}

export interface DetectionSpec extends InputNormalisation {
  file: string;
  /** The page is scaled so that its longer side is at most this many pixels. */
  maxSideLength: number;

  /** Input sides are rounded to a multiple of this (the network's total stride). */
  sizeMultiple: number;
  /** DB post-processing: probability threshold of the binary map. */
  threshold: number;
  /** DB post-processing: minimum mean probability inside a box. */
  boxThreshold: number;
  /** DB post-processing: how far a box is grown back (area * ratio / perimeter). */
  unclipRatio: number;
}

/** A line segmenter (layout/line-segmenter.ts): a page in, baseline, line-region (and line-end) maps out at half its input scale. */
export interface SegmentationSpec extends InputNormalisation {
  file: string;
  /** The page is scaled so that its longer side is this many pixels (up or down, as in training). */
  maxSideLength: number;
  /** Input sides are padded (white) to a multiple of this (the network's total stride). */
  sizeMultiple: number;
  /** Probability above which a map pixel is baseline. */
  baselineThreshold: number;
  /** Probability above which a map pixel is inside a line. */
  regionThreshold: number;
  /** Probability above which a map pixel is a line's end (models with an ends channel, layout/line-ends.ts). */
  endThreshold: number;
  /** Share of a segmented line's outline height that its crop keeps (as OUTLINE_CROP_HEIGHT for uploaded lines). */
  cropHeight: number;
}

export interface RecognitionSpec extends InputNormalisation {
  file: string;
  /** Absolute path of the character set file: one character (or string) per line. */
  charset: string;
  /** Line images are scaled to this height; widths are dynamic. */
  inputHeight: number;
  /**
   * How a line image that shrinks the page is filtered (image/raster.ts, `Resampling`): 'area' (the
   * mean of a grid of samples an output pixel) or 'bilinear' (one sample, as PaddleOCR resizes its crops).
   */
  resampling: Resampling;
  /** Class index of the CTC blank: 0 (PaddleOCR) or the last class. */
  blankIndex: 0 | 'last';
  /** Whether the model has an extra space class after the charset lines (PaddleOCR use_space_char). */
  appendSpace: boolean;
  /** Input widths are padded to a multiple of this. */
  widthMultiple: number;
  /** What pads a line to the batch width: white paper, or 0 after normalisation (PaddleOCR). */
  padding: 'white' | 'zero';
  /**
   * Columns of that padding (at `inputHeight`) after every line, whatever its batch. A
   * bidirectional recurrent model reads a line's last letters better with paper after them
   * (it was trained on batches padded to their widest line), and a fixed run of it keeps
   * one line's reading from depending on the widths of the lines batched with it. 0: none.
   */
  trailingPadding: number;
  minWidth: number;
  /** Longer lines are squeezed to this width. */
  maxWidth: number;
  /**
   * 'latin': decoding only chooses Latin letters, digits, punctuation and symbols of the
   * charset (for a multilingual charset, e.g. PP-OCR's Chinese one, on Western pages).
   */
  restrictTo: 'latin' | null;
  /**
   * Insert a word space wherever two read characters are separated by blank paper at
   * least this many line heights wide (for models that miss handwriting's spaces); null: off.
   */
  spacesFromGaps: number | null;
  /**
   * Each detected line is cut this many times its detected height (centred) before scaling to
   * `inputHeight`, so that the model sees the line framed as in its training data (dataset line
   * images carry the neighbouring lines' ascenders and descenders). Word boxes stay on the
   * detected line. 1: the detected box as it is.
   */
  cropHeightScale: number;
  /**
   * Read each text line as one crop around all its detected pieces (one scale for the
   * whole line, and the model and language model see the whole line's context), instead
   * of piece by piece. For line recognizers trained on whole lines.
   */
  readWholeLines: boolean;
  /**
   * Character confidences mapped to the share of characters right at that confidence, one map
   * per decoder (their confidences differ: beam search keeps characters the language model
   * chose at frames the model gave them little probability); fitted by
   * train/calibrate_confidence.ts. Applied to the readings a page keeps, after the two
   * recognizers' confidences were compared. null: as the model gives them.
   */
  confidenceCalibration: Record<'greedy' | 'beam', CalibrationPoints | null>;
  /** What the output holds: softmax probabilities or raw logits. */
  output: 'probabilities' | 'logits';
  /** Output tensor layout: [batch, time, classes] or [time, batch, classes]. */
  outputLayout: 'NTC' | 'TNC';
}

/** A character n-gram LM (`hwr-char-ngram/1`, decoding/char-ngram-lm.ts) and the beam search settings it is used with. */
export interface LanguageModelSpec extends BeamSearchOptions {
  file: string;
  /** Which model of the file: `all` (joint), one language's, or `auto` (per page, the language that fits it best). */
  model: string;
  /** Known words per language (decoding/known-words.ts), or null: no word bonus (`wordBonus` is then unused). */
  lexicon: string | null;
}

/** How a page's lines are shared between the screening and the main recognizer (select-reading.ts). */
export interface SelectionSpec {
  /**
   * A line the screening recognizer reads with at least this mean character confidence keeps
   * its reading; a page whose probe lines it reads under this is read by the main recognizer alone.
   */
  keepAbove: number;
  /** Below `keepAbove`, the screening reading still wins when surer than the main one by more than this. */
  margin: number;
  /** How many of the page's widest lines the screening recognizer reads first (the probe). */
  probeLines: number;
  /** A line the main recognizer reads with a confidence under this, and the screening one not at all, is noise: dropped. */
  dropBelow: number;
  /**
   * A sure screening reading (at `keepAbove` or more: the probe's, which makes a page printed, or a
   * line's on a handwritten page) stands only when it is also surer than the main recognizer's
   * reading of the same lines by more than this; null: it stands without asking the main one.
   */
  sureMargin: number | null;
  /**
   * A probe the screening recognizer reads at least this surely makes the page printed without
   * asking the main recognizer (`sureMargin` is not checked): no handwriting read that surely; null:
   * always ask.
   */
  printedAbove: number | null;
}

/**
 * A recognizer that reads print well and handwriting badly (PP-OCRv4): it screens each page
 * and keeps the lines it is sure of; the main recognizer reads the others.
 */
export interface ScreeningSpec extends SelectionSpec, NamedRecognizerSpec {
  /**
   * A recognizer of our own trained on print (models/hwr-print-v1), or null: on a page whose probe
   * the screening recognizer read at `printedAbove` or more, it reads the page's other lines in the
   * screening recognizer's place, which then reads the probe only (docs/recognition.md, "A print reader").
   */
  print: NamedRecognizerSpec | null;
}

/** A recognizer with the model it comes from (the screening section's two). */
export interface NamedRecognizerSpec {
  /** Name and version of the model the recognizer comes from. */
  source: { name: string; version: string };
  recognition: RecognitionSpec;
  languageModel: LanguageModelSpec | null;
}

export interface OrientationSpec extends InputNormalisation {
  file: string;
  inputHeight: number;
  inputWidth: number;
  /** Rotation in degrees each output class means, e.g. [0, 180]. */
  labels: number[];
  /** A line is turned only when the classifier is at least this sure. */
  threshold: number;
}

export interface ModelSpec {
  name: string;
  version: string;
  /** Directory the manifest was read from (null for the built-in model). */
  directory: string | null;
  detection: DetectionSpec;
  /** Lines from a trained segmenter instead of the detector (which stays the fallback); null: detector only. */
  segmentation: SegmentationSpec | null;
  recognition: RecognitionSpec;
  /** Name and version of the model the recognition section comes from (this one unless borrowed). */
  recognitionSource: { name: string; version: string };
  /** The LM beam search decodes the recognition output with; null: greedy decoding only. */
  languageModel: LanguageModelSpec | null;
  orientation: OrientationSpec | null;
  screening: ScreeningSpec | null;
  layout: LayoutSpec;
}

/** What the laid-out lines go through before they are read, whichever model laid them out. */
export interface LayoutSpec {
  /**
   * A line whose ink contrast is under this share of the page's median line is dropped as
   * show-through, a stain or a faint ruling (layout/ink-contrast.ts); 0: every line is kept.
   */
  faintLineRatio: number;
}
