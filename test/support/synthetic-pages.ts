// Synthetic PageResults for edge cases the ground truth does not cover.
import type { PageResult, TextLine, Word } from '../../src/recognition/page/page-result.ts';

export function syntheticPage(overrides: Partial<PageResult> = {}): PageResult {
  return {
    schema: 'hwr.page-result/1',
    pageNumber: 1,
    image: { name: 'letters/Brief & "Nachtrag" <1>.jpg', width: 1200, height: 800, sha256: 'a'.repeat(64), format: 'jpeg', dpi: 300 },
    regions: [
      {
        id: 'r1',
        polygon: [
          [50, 50],
          [1150, 50],
          [1150, 400],
          [50, 400],
        ],
        type: 'paragraph',
        lines: [line('l1', 100, 'Grüße & <Dank> "ſo" ä ß œ é', 0.91), line('l2', 220, "Tom's café — naïve façade", 0.42)],
      },
      {
        id: 'r2',
        polygon: [
          [50, 450],
          [1150, 450],
          [1150, 700],
          [50, 700],
        ],
        type: 'signature',
        lines: [line('l3', 500, 'Zwoͤlftes Stuͤk ⟦gestrichen⟧', 0.8)],
      },
    ],
    producer: {
      software: 'hwr',
      version: '0.1.0',
      models: [
        { role: 'detection', name: 'dbnet-lines', version: '2024.1' },
        { role: 'recognition', name: 'trocr-hw', version: '3.2' },
      ],
    },
    correction: { provider: 'gemini', model: 'gemini-2.5-flash', refusedLines: [], inputTokens: 10, outputTokens: 12 },
    warnings: ['correction refused for 0 lines'],
    ...overrides,
  };
}

/** A horizontal line at `top` whose words are laid out left to right, 20 px per character. */
export function line(id: string, top: number, text: string, confidence: number): TextLine {
  let x = 100;
  const words: Word[] = text.split(' ').map((token, index) => {
    const width = [...token].length * 20;
    const word: Word = { id: `${id}_w${index + 1}`, text: token, box: { x, y: top, width, height: 60 }, confidence };
    x += width + 20;
    return word;
  });
  return {
    id,
    polygon: [
      [95, top - 5],
      [x, top - 5],
      [x, top + 65],
      [95, top + 65],
    ],
    baseline: [
      [100, top + 48],
      [x - 20, top + 50],
    ],
    text,
    confidence,
    words,
  };
}

/** The same page after `pipeline_steps=layout`: geometry, no text. */
export function layoutOnlyPage(): PageResult {
  const page = syntheticPage({ correction: undefined, warnings: [] });
  return {
    ...page,
    producer: { ...page.producer, models: page.producer.models.filter((model) => model.role === 'detection') },
    regions: page.regions.map((region) => ({
      ...region,
      lines: region.lines.map((textLine) => ({ ...textLine, text: '', confidence: 0, words: [] })),
    })),
  };
}
