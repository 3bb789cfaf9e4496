// "Train on these pages" (docs/models.md, "Ground truth from a job's corrections"; ADR 0032): a
// model's ground truth written straight from a done job's pages, their images and their corrected
// lines, and its training queued as an uploaded ground truth's is. A page's lines a person
// corrected are taken; its untouched lines only where the page is marked checked (its machine
// reading was read and found right). The same line rules as an upload (ground-truth-text.ts).
import { randomUUID } from 'node:crypto';
import type { GroundTruthSkips } from '../../domain/events.ts';
import { DEFAULT_MODEL } from '../../domain/model.ts';
import { readCorrectedPages, readPageCorrections } from '../../projections/corrections.ts';
import { type ModelRow, readAccountModel } from '../../projections/models.ts';
import { groundTruthPrefix, modelPrefix } from '../blobs/blob-keys.ts';
import { pageFileNames } from '../export/archive-layout.ts';
import { applyCorrections } from '../export/export-page.ts';
import { renderPageXml } from '../export/pagexml.ts';
import { GROUND_TRUTH_FORMAT, type GroundTruthDocument, type GroundTruthLine, type GroundTruthPage } from '../intake/ground-truth.ts';
import { GroundTruthError } from '../intake/ground-truth-error.ts';
import { codePointName, normaliseLineText, tooSmallToRead } from '../intake/ground-truth-text.ts';
import { MIN_TRAINING_LINES } from '../intake/ground-truth-zip.ts';
import { doneJobOf, storedPageOf } from './corrections.ts';
import { ModelError } from './errors.ts';
import { type ModelDeps, usableModel } from './models.ts';

export interface JobTrainingRequest {
  accountId: string;
  /** The API key that asks; null for a portal user (then `actor`). */
  keyId: string | null;
  actor?: string;
  jobId: string | null;
  /** The pages to train on; null: every corrected page and every checked page. */
  pages: number[] | null;
  /** Pages whose untouched lines are right as the machine read them (their lines are all taken). */
  checkedPages: number[];
  label: string | null;
  baseModel: string;
  requestId?: string;
}

/**
 * The body of POST /v1/process-scan/{id}/models: `{"pages"?: [n…], "checked_pages"?: [n…],
 * "label"?: "…", "base_model"?: "…"}`; ModelError invalid_training_request otherwise.
 */
export function parseJobTrainingBody(body: unknown): {
  pages: number[] | null;
  checkedPages: number[];
  label: string | null;
  baseModel: string | null;
} {
  const refuse = (why: string): never => {
    throw new ModelError(
      'invalid_training_request',
      `The body must be {"pages": [PAGE…], "checked_pages": [PAGE…], "label": "…", "base_model": "…"} (all optional): ${why}.`,
    );
  };
  if (body === undefined || body === null) return { pages: null, checkedPages: [], label: null, baseModel: null };
  if (typeof body !== 'object' || Array.isArray(body)) refuse('it is not a JSON object');
  const { pages, checked_pages: checked, label, base_model: baseModel, ...rest } = body as Record<string, unknown>;
  if (Object.keys(rest).length > 0) refuse(`unknown field ${JSON.stringify(Object.keys(rest)[0])}`);
  const pageList = (value: unknown, name: string): number[] | null => {
    if (value === undefined || value === null) return null;
    if (!Array.isArray(value) || !value.every((page) => Number.isSafeInteger(page) && page >= 1))
      refuse(`${name} must be a list of page numbers`);
    return [...new Set(value as number[])].sort((a, b) => a - b);
  };
  if (label !== undefined && label !== null && typeof label !== 'string') refuse('label must be a string');
  if (baseModel !== undefined && baseModel !== null && typeof baseModel !== 'string') refuse('base_model must be a string');
  return {
    pages: pageList(pages, 'pages'),
    checkedPages: pageList(checked, 'checked_pages') ?? [],
    label: (label as string | null | undefined) ?? null,
    baseModel: (baseModel as string | null | undefined) ?? null,
  };
}

/**
 * Writes the ground truth of a job's chosen pages under the new model's prefix (each page's image
 * copied, since the job's files expire before a model does; its PageXML with the corrections beside
 * it) and queues the training. Throws ModelError (invalid_training_request, no_corrected_pages, the
 * base model's), GroundTruthError (no_usable_lines, too_few_lines), the job's refusals; a refusal
 * leaves nothing of the model stored.
 */
export async function queueTrainingFromJob(deps: ModelDeps, request: JobTrainingRequest): Promise<ModelRow> {
  if (request.baseModel !== DEFAULT_MODEL) await usableModel(deps.db.pool, request.accountId, request.baseModel, 'base_model');
  const job = await doneJobOf(deps.db.pool, request.accountId, request.jobId);
  const outside = [...(request.pages ?? []), ...request.checkedPages].filter((page) => page > job.page_count);
  if (outside.length > 0)
    throw new ModelError('invalid_training_request', `The job has ${job.page_count} pages; there is no page ${outside[0]}.`);
  const corrected = await readCorrectedPages(deps.db.pool, job.job_id);
  const checked = new Set(request.checkedPages);
  const chosen = request.pages ?? [...new Set([...corrected.keys(), ...checked])].sort((a, b) => a - b);
  const usable = chosen.filter((page) => corrected.has(page) || checked.has(page));
  if (usable.length === 0)
    throw new ModelError(
      'no_corrected_pages',
      request.pages
        ? `None of pages ${request.pages.join(', ')} has a corrected line or is marked checked (checked_pages).`
        : 'The job has no corrected page and no page is marked checked (checked_pages).',
    );

  const modelId = randomUUID();
  const prefix = groundTruthPrefix(modelId);
  const skipped: GroundTruthSkips = { noText: 0, noGeometry: 0, outsideImage: 0, tooSmall: 0, unlearnableCharacters: 0 };
  const unlearnable = new Set<string>();
  const warnings: string[] = [];
  const pages: GroundTruthPage[] = [];
  try {
    for (const [index, pageNumber] of usable.entries()) {
      const stored = await storedPageOf(deps, job, pageNumber);
      const corrections = await readPageCorrections(deps.db.pool, job.job_id, pageNumber);
      const page = applyCorrections(stored.export, Object.fromEntries(corrections.lines));
      const lines: GroundTruthLine[] = [];
      for (const line of page.regions.flatMap((region) => region.lines)) {
        if (!corrections.lines.has(line.id) && !checked.has(pageNumber)) continue;
        const text = normaliseLineText(line.text);
        if (text.text === '') {
          skipped.noText++;
          continue;
        }
        if (text.unlearnable.length > 0) {
          skipped.unlearnableCharacters++;
          for (const character of text.unlearnable) unlearnable.add(character);
          continue;
        }
        if (tooSmallToRead(line.polygon, text.text) !== null) {
          skipped.tooSmall++;
          continue;
        }
        lines.push({ id: line.id, text: text.text, polygon: line.polygon, baseline: line.baseline ?? [] });
      }
      const number = String(index + 1).padStart(4, '0');
      const extension = /\.[A-Za-z0-9]{1,5}$/.exec(stored.name)?.[0].toLowerCase() ?? '';
      const imageKey = `${prefix}/pages/${number}${extension}`;
      const image = await deps.blobs.get(stored.imageKey);
      await deps.blobs.put(imageKey, image);
      const layoutName = pageFileNames(pageNumber, job.page_count, stored.name).page;
      const layoutKey = `${prefix}/pages/${number}.layout.xml`;
      await deps.blobs.put(layoutKey, Buffer.from(renderPageXml(page, { timestamp: job.created_at }), 'utf8'));
      pages.push({
        pageNumber: index + 1,
        name: stored.name,
        imageKey,
        sha256: stored.result.image.sha256,
        bytes: image.length,
        width: page.width,
        height: page.height,
        layoutName,
        layoutKey,
        layoutFormat: 'page-2019',
        lines,
      });
    }
    const linesTotal = pages.reduce((sum, page) => sum + page.lines.length, 0);
    if (linesTotal === 0) throw new GroundTruthError('no_usable_lines', `no line of the ${pages.length} pages chosen can be trained on`);
    if (linesTotal < MIN_TRAINING_LINES)
      throw new GroundTruthError(
        'too_few_lines',
        `${linesTotal} usable line${linesTotal > 1 ? 's' : ''} on ${pages.length} page${pages.length > 1 ? 's' : ''}; a training needs at least ${MIN_TRAINING_LINES}: correct more lines, or mark pages whose reading is right as checked`,
      );
    if (unlearnable.size > 0)
      warnings.push(
        `left out ${skipped.unlearnableCharacters} lines with characters no model can learn (${[...unlearnable].map(codePointName).join(', ')})`,
      );
    const characters = [...new Set(pages.flatMap((page) => page.lines.flatMap((line) => [...line.text])))].sort(
      (a, b) => (a.codePointAt(0) ?? 0) - (b.codePointAt(0) ?? 0),
    );
    const document: GroundTruthDocument = { format: GROUND_TRUTH_FORMAT, pages, linesTotal, characters };
    const groundTruthKey = `${prefix}/ground-truth.json`;
    await deps.blobs.put(groundTruthKey, JSON.stringify(document));
    await deps.bus.model(
      modelId,
      {
        type: 'QueueModelTraining',
        modelId,
        accountId: request.accountId,
        keyId: request.keyId,
        label: request.label,
        baseModel: request.baseModel,
        groundTruthKey,
        pagesTotal: pages.length,
        linesTotal,
        linesSkipped: skipped,
        warnings,
        now: new Date(),
      },
      { actor: request.actor ?? request.keyId ?? 'api', requestId: request.requestId, causationId: `job:${job.job_id}` },
    );
  } catch (error) {
    await deps.blobs.deletePrefix(modelPrefix(modelId)).catch(() => {});
    throw error;
  }
  const row = await readAccountModel(deps.db.pool, modelId, request.accountId);
  if (!row) throw new Error(`model ${modelId} was recorded but has no row`);
  return row;
}
