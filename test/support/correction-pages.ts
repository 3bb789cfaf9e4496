// Hand-built page results for correction tests: line boxes from a real page
// (hooker_JDH_2_16_144_002, first lines; see test/fixtures/README.md), texts as a
// recogniser might have read them, word boxes laid out along each line in
// proportion to their characters, as recognition does.
import type { Box, PageResult, TextLine, Word } from '../../src/recognition/page/page-result.ts';
import type { JobOptions, LlmTier } from '../../src/pipeline/pipeline.ts';

export interface LineSpec {
  id: string;
  text: string;
  box: [x: number, y: number, width: number, height: number];
  confidence?: number;
}

export function buildLine(spec: LineSpec): TextLine {
  const [x, y, width, height] = spec.box;
  const confidence = spec.confidence ?? 0.9;
  const texts = spec.text.split(' ').filter((text) => text.length > 0);
  const units = spec.text.length;
  let position = 0;
  const words: Word[] = [];
  for (const [index, text] of texts.entries()) {
    position = spec.text.indexOf(text, position);
    const box: Box = {
      x: Math.round(x + (width * position) / units),
      y,
      width: Math.max(1, Math.round((width * text.length) / units)),
      height,
    };
    words.push({ id: `${spec.id}w${index + 1}`, text, box, confidence });
    position += text.length;
  }
  return {
    id: spec.id,
    polygon: [
      [x, y],
      [x + width, y],
      [x + width, y + height],
      [x, y + height],
    ],
    baseline: [
      [x, y + Math.round(height * 0.8)],
      [x + width, y + Math.round(height * 0.8)],
    ],
    text: spec.text,
    confidence,
    words,
  };
}

export function buildPage(lines: LineSpec[], pageNumber = 1): PageResult {
  return {
    schema: 'hwr.page-result/1',
    pageNumber,
    image: { name: 'hooker_JDH_2_16_144_002.jpg', width: 1448, height: 2152, sha256: '0'.repeat(64), format: 'jpeg', dpi: null },
    regions: [
      {
        id: 'r1',
        polygon: [
          [52, 111],
          [1075, 111],
          [1075, 1071],
          [52, 1071],
        ],
        lines: lines.map(buildLine),
      },
    ],
    producer: { software: 'hwr', version: 'test', models: [] },
    warnings: [],
  };
}

/** The first six lines of hooker_JDH_2_16_144_002, with typical recognition errors. */
export const HOOKER_RECOGNISED: LineSpec[] = [
  { id: 'r1l1', text: 'Stapf will complicatc my work', box: [128, 85, 953, 152], confidence: 0.81 },
  { id: 'r1l2', text: 'by what he is doinq with tho', box: [146, 184, 797, 121], confidence: 0.74 },
  { id: 'r1l3', text: 'African grasscs -- These come', box: [159, 272, 850, 135], confidence: 0.83 },
  { id: 'r1l4', text: 'to hard blows withthe Indian', box: [95, 392, 818, 83], confidence: 0.79 },
  { id: 'r1l5', text: 'as well as with those of', box: [106, 486, 641, 86], confidence: 0.93 },
  { id: 'r1l6', text: 'their own house!. &', box: [83, 573, 577, 78], confidence: 0.88 },
];

/** The ground truth of the same lines (from the page's PAGE XML). */
export const HOOKER_TRUTH: Record<string, string> = {
  r1l1: 'Stapf will complicate my work',
  r1l2: 'by what he is doing with the',
  r1l3: 'African grasses -- These come',
  r1l4: 'to hard blows with the Indian',
  r1l5: 'as well as with those of',
  r1l6: 'their own house!. &',
};

export function jobOptions(llmTier: LlmTier = 'balanced', preset = 'generic'): JobOptions {
  return { llmTier, preset, pipelineSteps: ['layout', 'recognition', 'correction', 'export'], pdfFormat: 'pdfa-2b', webhookUrl: null };
}

/** The recognised lines a request carried, parsed back from its user text. */
export function requestLines(userText: string): Array<{ id: string; text: string; confidence: number }> {
  const start = userText.indexOf('{');
  return JSON.parse(userText.slice(start)).lines;
}
