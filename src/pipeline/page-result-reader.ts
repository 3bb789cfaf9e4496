// Reads one stored PageResult and checks its shape before anything is exported from it:
// a broken result fails the export with `page_result_invalid` and the path of the bad field.
// Texts are made exportable the same way for every format (see `exportableText`).
import { BlobNotFoundError, type BlobStore } from '../blobs/blob-store.ts';
import type { PageResult } from '../recognition/page/page-result.ts';
import { ExportError } from '../export/errors.ts';
import { toXmlSafeText } from '../export/xml.ts';

export async function readPageResult(blobs: BlobStore, key: string, pageNumber: number): Promise<PageResult> {
  let bytes: Buffer;
  try {
    bytes = await blobs.get(key);
  } catch (error) {
    if (error instanceof BlobNotFoundError) {
      throw new ExportError('page_result_missing', `page ${pageNumber}: no stored page result at ${key}`, { pageNumber, cause: error });
    }
    throw error;
  }
  let json: unknown;
  try {
    json = JSON.parse(bytes.toString('utf8'));
  } catch (error) {
    throw new ExportError('page_result_invalid', `page ${pageNumber}: page result is not JSON`, { pageNumber, cause: error });
  }
  return validatePageResult(json, pageNumber);
}

/** Validates a parsed PageResult; returns a copy with exportable texts. */
export function validatePageResult(json: unknown, pageNumber: number): PageResult {
  const problems: string[] = [];
  const check = new Checker(problems);
  const page = json as PageResult;
  if (check.object(json, '$')) {
    check.equals(page.schema, 'hwr.page-result/1', '$.schema');
    check.positiveInteger(page.pageNumber, '$.pageNumber');
    if (check.object(page.image, '$.image')) {
      check.string(page.image.name, '$.image.name');
      check.positiveInteger(page.image.width, '$.image.width');
      check.positiveInteger(page.image.height, '$.image.height');
      check.string(page.image.sha256, '$.image.sha256');
      check.string(page.image.format, '$.image.format');
      if (page.image.dpi !== null && !(typeof page.image.dpi === 'number' && page.image.dpi > 0 && Number.isFinite(page.image.dpi))) {
        problems.push('$.image.dpi must be a positive number or null');
      }
    }
    if (check.object(page.producer, '$.producer')) {
      check.string(page.producer.software, '$.producer.software');
      check.string(page.producer.version, '$.producer.version');
      if (check.array(page.producer.models, '$.producer.models')) {
        page.producer.models.forEach((model, index) => {
          const path = `$.producer.models[${index}]`;
          if (!check.object(model, path)) return;
          check.string(model.role, `${path}.role`);
          check.string(model.name, `${path}.name`);
          check.string(model.version, `${path}.version`);
        });
      }
    }
    if (page.correction !== undefined && check.object(page.correction, '$.correction')) {
      check.string(page.correction.provider, '$.correction.provider');
      check.string(page.correction.model, '$.correction.model');
      check.array(page.correction.refusedLines, '$.correction.refusedLines');
    }
    if (page.orientation !== undefined && ![90, 180, 270].includes(page.orientation))
      problems.push('$.orientation must be 90, 180 or 270 (the clockwise turn that makes the page upright)');
    if (check.array(page.warnings, '$.warnings')) page.warnings.forEach((warning, index) => check.string(warning, `$.warnings[${index}]`));
    if (check.array(page.regions, '$.regions')) {
      page.regions.forEach((region, r) => {
        const path = `$.regions[${r}]`;
        if (!check.object(region, path)) return;
        check.string(region.id, `${path}.id`);
        check.points(region.polygon, `${path}.polygon`);
        if (region.type !== undefined) check.string(region.type, `${path}.type`);
        if (!check.array(region.lines, `${path}.lines`)) return;
        region.lines.forEach((line, l) => {
          const linePath = `${path}.lines[${l}]`;
          if (!check.object(line, linePath)) return;
          check.string(line.id, `${linePath}.id`);
          check.string(line.text, `${linePath}.text`);
          check.number(line.confidence, `${linePath}.confidence`);
          check.points(line.polygon, `${linePath}.polygon`);
          check.points(line.baseline, `${linePath}.baseline`);
          if (!check.array(line.words, `${linePath}.words`)) return;
          line.words.forEach((word, w) => {
            const wordPath = `${linePath}.words[${w}]`;
            if (!check.object(word, wordPath)) return;
            check.string(word.id, `${wordPath}.id`);
            check.string(word.text, `${wordPath}.text`);
            check.number(word.confidence, `${wordPath}.confidence`);
            if (check.object(word.box, `${wordPath}.box`)) {
              for (const field of ['x', 'y', 'width', 'height'] as const) check.number(word.box[field], `${wordPath}.box.${field}`);
            }
            if (word.polygon !== undefined) check.points(word.polygon, `${wordPath}.polygon`);
            if (word.alternatives !== undefined && check.array(word.alternatives, `${wordPath}.alternatives`)) {
              word.alternatives.forEach((alternative, a) => {
                if (!check.object(alternative, `${wordPath}.alternatives[${a}]`)) return;
                check.string(alternative.text, `${wordPath}.alternatives[${a}].text`);
                check.number(alternative.confidence, `${wordPath}.alternatives[${a}].confidence`);
              });
            }
          });
        });
      });
    }
  }
  if (problems.length > 0) {
    const shown = problems.slice(0, 5).join('; ');
    const more = problems.length > 5 ? ` (and ${problems.length - 5} more)` : '';
    throw new ExportError('page_result_invalid', `page ${pageNumber}: invalid page result: ${shown}${more}`, { pageNumber });
  }
  return {
    ...page,
    regions: page.regions.map((region) => ({
      ...region,
      lines: region.lines.map((line) => ({
        ...line,
        text: exportableText(line.text),
        words: line.words.map((word) => ({
          ...word,
          text: exportableText(word.text),
          ...(word.alternatives
            ? { alternatives: word.alternatives.map((alternative) => ({ ...alternative, text: exportableText(alternative.text) })) }
            : {}),
        })),
      })),
    })),
  };
}

/**
 * The text every format exports for a line or word: tabs and line breaks become spaces (a
 * TextLine is one line) and characters XML cannot carry become U+FFFD, so that PageXML, ALTO,
 * the text files and the PDF text layer all say the same.
 */
export function exportableText(text: string): string {
  return toXmlSafeText(text.replace(/[\t\n\r\u2028\u2029]/g, ' '));
}

class Checker {
  private readonly problems: string[];
  constructor(problems: string[]) {
    this.problems = problems;
  }
  object(value: unknown, path: string): boolean {
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) return true;
    this.problems.push(`${path} must be an object`);
    return false;
  }
  array(value: unknown, path: string): value is unknown[] {
    if (Array.isArray(value)) return true;
    this.problems.push(`${path} must be an array`);
    return false;
  }
  string(value: unknown, path: string): void {
    if (typeof value !== 'string') this.problems.push(`${path} must be a string`);
  }
  number(value: unknown, path: string): void {
    if (typeof value !== 'number' || !Number.isFinite(value)) this.problems.push(`${path} must be a finite number`);
  }
  positiveInteger(value: unknown, path: string): void {
    if (!Number.isSafeInteger(value) || (value as number) < 1) this.problems.push(`${path} must be a positive integer`);
  }
  equals(value: unknown, expected: string, path: string): void {
    if (value !== expected) this.problems.push(`${path} must be ${JSON.stringify(expected)}`);
  }
  points(value: unknown, path: string): void {
    if (!this.array(value, path)) return;
    const bad = value.findIndex(
      (point) => !Array.isArray(point) || point.length !== 2 || !point.every((c) => typeof c === 'number' && Number.isFinite(c)),
    );
    if (bad >= 0) this.problems.push(`${path}[${bad}] must be an [x, y] pair of finite numbers`);
  }
}
