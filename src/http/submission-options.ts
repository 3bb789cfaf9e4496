// The optional fields of POST /v1/process-scan, validated into JobOptions.
import { checkWebhookUrl } from '../callbacks/webhook-url.ts';
import type { Config } from '../platform/config.ts';
import {
  LLM_TIERS,
  PDF_FORMATS,
  PIPELINE_STEPS,
  type JobOptions,
  type LlmTier,
  type PdfFormat,
  type PipelineStep,
} from '../pipeline/pipeline.ts';
import { DEFAULT_PRESET, isPreset, PRESETS } from '../recognition/correction/presets.ts';
import { DEFAULT_MODEL } from '../../domain/model.ts';
import { ModelError } from '../use-cases/errors.ts';
import { HttpProblem, type HttpProblemCode } from './problem.ts';
import { isUuid } from '../shared/uuid.ts';

type Fields = Record<string, string | string[] | undefined>;

/**
 * The form fields of a submission besides its file (`scan_zip`). Any other field is refused with
 * `unknown_field`: a typo (`pipline_steps`) ignored would run a paid job on the defaults
 * (docs/decisions/0030-unknown-submission-fields-are-refused.md).
 */
const SUBMISSION_FIELDS: readonly string[] = ['llm_tier', 'preset', 'pdf_format', 'pipeline_steps', 'webhook_url', 'model'];

export async function parseSubmissionOptions(fields: Fields, config: Config): Promise<JobOptions> {
  const unknown = Object.keys(fields).filter((name) => name !== 'scan_zip' && !SUBMISSION_FIELDS.includes(name));
  if (unknown.length > 0) {
    throw invalid(
      'unknown_field',
      `unknown form field${unknown.length === 1 ? '' : 's'} ${unknown.map((name) => JSON.stringify(name)).join(', ')}; a submission takes scan_zip and ${SUBMISSION_FIELDS.join(', ')}`,
    );
  }
  const llmTier = oneOf(field(fields, 'llm_tier') ?? 'balanced', LLM_TIERS, 'llm_tier', 'invalid_llm_tier') as LlmTier;
  const preset = field(fields, 'preset') ?? DEFAULT_PRESET;
  if (!isPreset(preset)) throw invalid('invalid_preset', `preset must be one of ${PRESETS.join(', ')}; got ${JSON.stringify(preset)}`);
  const pdfFormat = oneOf(field(fields, 'pdf_format') ?? 'pdfa-2b', PDF_FORMATS, 'pdf_format', 'invalid_pdf_format') as PdfFormat;
  const pipelineSteps = parsePipelineSteps(field(fields, 'pipeline_steps') ?? 'all');
  const rawWebhook = field(fields, 'webhook_url');
  const webhookUrl = rawWebhook
    ? (await checkWebhookUrl(rawWebhook, { allowHttp: config.callbacks.allowHttp, allowPrivate: config.callbacks.allowPrivate })).toString()
    : null;
  const model = parseModelField(field(fields, 'model'), 'model');
  return { llmTier, preset, pipelineSteps, pdfFormat, webhookUrl, ...(model === DEFAULT_MODEL ? {} : { model }) };
}

/**
 * A `model` or `base_model` field: `default` (also when absent or empty) or a model id (a UUID,
 * lower-cased); anything else ModelError invalid_model. Whether the account has that model,
 * ready, is the use case's check (use-cases/models.ts).
 */
export function parseModelField(value: string | null, name: 'model' | 'base_model'): string {
  if (value === null || value.toLowerCase() === DEFAULT_MODEL) return DEFAULT_MODEL;
  if (!isUuid(value))
    throw new ModelError('invalid_model', `${name} must be ${DEFAULT_MODEL} or a model id; got ${JSON.stringify(value.slice(0, 100))}`);
  return value.toLowerCase();
}

/** `all`, or a comma list that runs the steps in order without gaps; export always runs. */
export function parsePipelineSteps(raw: string): PipelineStep[] {
  const value = raw.trim().toLowerCase();
  if (value === 'all') return [...PIPELINE_STEPS];
  const requested = value
    .split(',')
    .map((step) => step.trim())
    .filter(Boolean);
  for (const step of requested) {
    if (!(PIPELINE_STEPS as readonly string[]).includes(step)) {
      throw invalid(
        'invalid_pipeline_steps',
        `pipeline_steps has an unknown step ${JSON.stringify(step)}; use all or a comma list of ${PIPELINE_STEPS.join(', ')}`,
      );
    }
  }
  const pageSteps = PIPELINE_STEPS.filter((step) => step !== 'export' && requested.includes(step));
  if (pageSteps.length === 0)
    throw invalid('invalid_pipeline_steps', 'pipeline_steps must include layout (export alone has nothing to export)');
  const expected = PIPELINE_STEPS.slice(0, pageSteps.length);
  if (pageSteps.some((step, index) => step !== expected[index])) {
    throw invalid(
      'invalid_pipeline_steps',
      `each step needs the ones before it: ${pageSteps.join(',')} skips ${expected.filter((step) => !pageSteps.includes(step)).join(', ')}`,
    );
  }
  return [...pageSteps, 'export'];
}

export function field(fields: Fields, name: string): string | null {
  const value = fields[name];
  // Two values for one option would leave the job's option to the order of the parts.
  if (Array.isArray(value) && value.length > 1)
    throw invalid('invalid_multipart', `the field ${name} is given ${value.length} times; give it once`);
  const single = Array.isArray(value) ? value[0] : value;
  const trimmed = single?.trim();
  return trimmed ? trimmed : null;
}

function oneOf(value: string, allowed: readonly string[], name: string, code: HttpProblemCode): string {
  if (!allowed.includes(value)) throw invalid(code, `${name} must be one of ${allowed.join(', ')}; got ${JSON.stringify(value)}`);
  return value;
}

function invalid(code: HttpProblemCode, detail: string): HttpProblem {
  return new HttpProblem(code, detail);
}
