// The OpenAPI 3.1 document of the whole interface, served at /v1/openapi.json.
// Tests validate every response they receive against it.
import { MODEL_STATES } from '../../domain/model.ts';
import { LLM_TIERS, PDF_FORMATS } from '../pipeline/pipeline.ts';
import { PRESETS } from '../recognition/correction/presets.ts';

const timestamp = { type: 'string', format: 'date-time' } as const;
const nullableTimestamp = { type: ['string', 'null'], format: 'date-time' } as const;
const uuid = { type: 'string', format: 'uuid' } as const;

const problem = (description: string) => ({
  description,
  content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
});

const unauthorized = {
  ...problem('Missing or invalid API key.'),
  headers: {
    'WWW-Authenticate': {
      required: true,
      description: 'The scheme to authenticate with.',
      schema: { type: 'string', pattern: '^Bearer\\b' },
    },
  },
};

const retryAfter = {
  'Retry-After': { required: true, description: 'Seconds to wait before trying again.', schema: { type: 'string', pattern: '^[0-9]+$' } },
};

/** Every authenticated operation: the key's request rate (RATE_LIMIT_PER_SECOND, RATE_LIMIT_BURST). */
const rateLimited = {
  ...problem('rate_limited: this API key sent requests faster than its rate limit; retry after Retry-After seconds.'),
  headers: retryAfter,
};

/** Every operation that reads the database (each authenticated one looks its key up there). */
const databaseUnavailable = {
  ...problem('database_unavailable: the service cannot reach its database at the moment; retry after Retry-After seconds.'),
  headers: retryAfter,
};

/** An operation that reads stored files as well (the result). */
const databaseOrStorageUnavailable = {
  ...problem(
    'database_unavailable or storage_unavailable: the service cannot reach its database, or its file storage (an S3 bucket), ' +
      'at the moment; retry after Retry-After seconds.',
  ),
  headers: retryAfter,
};

const JOB_ID_PARAMETER = { name: 'job_id', in: 'path', required: true, schema: { type: 'string' }, description: 'The job id (a UUID).' };
const MODEL_ID_PARAMETER = {
  name: 'model_id',
  in: 'path',
  required: true,
  schema: { type: 'string' },
  description: 'The model id (a UUID).',
};
const fraction = { type: 'number', minimum: 0 } as const;
const PAGE_PARAMETER = { name: 'page', in: 'path', required: true, schema: { type: 'string' }, description: 'The page number (1-based).' };
const point = { type: 'array', items: { type: 'number' }, minItems: 2, maxItems: 2 } as const;
const points = { type: 'array', items: point } as const;
const nullableConfidence = { type: ['number', 'null'], minimum: 0, maximum: 1 } as const;

const TOKEN_PARAMETER = {
  name: 'token',
  in: 'path',
  required: true,
  schema: { type: 'string', pattern: '^[0-9a-f-]{36}\\.[0-9]{1,12}\\.[A-Za-z0-9_-]{43}$' },
  description: 'The signed URL’s token (key id, expiry, HMAC): the credential of every IIIF URL the manifest names (docs/iiif.md).',
};
const iiifJson = (description: string, required: string[], type?: string) => ({
  description,
  content: {
    'application/ld+json': {
      schema: { type: 'object', required, properties: type ? { type: { const: type } } : {} },
    },
  },
});
const iiifSigned = {
  '401': problem(
    'invalid_iiif_token: the signed URL is malformed, expired, forged, or its key was revoked; fetch the manifest again with the key.',
  ),
  '404': problem('job_not_found (unknown, or the token is for another job), unknown_page or not_found.'),
  '409': problem('job_not_done (retryable), job_failed or job_cancelled.'),
  '410': problem('result_expired: after expires_at.'),
  '429': rateLimited,
  '503': databaseOrStorageUnavailable,
};

/** IIIF for a done job (docs/iiif.md): the manifest, its signed URLs, the Image API, annotations, search. */
function iiifPaths() {
  const signed = '/v1/process-scan/{job_id}/iiif/{token}';
  return {
    '/v1/process-scan/{job_id}/iiif/manifest': {
      parameters: [JOB_ID_PARAMETER],
      get: {
        operationId: 'getIiifManifest',
        summary: 'The IIIF Presentation 3 manifest of a done job, its URLs signed for a viewer',
        description:
          'A Canvas per page with its image (Image API 3, level 1 and more), the lines and words as annotation pages ' +
          '(supplementing, TextualBody, xywh targets; corrected text where people corrected) and a Content Search 2 service. ' +
          'Every URL in it carries a token signed with this key (docs/iiif.md): open the manifest’s `id` in a IIIF viewer. ' +
          '`ttl`: seconds the URLs live, 60 to 86400 (default 3600; rounded up to 10 minutes). Revoking the key ends them.',
        parameters: [{ name: 'ttl', in: 'query', required: false, schema: { type: 'string', pattern: '^[0-9]+$' } }],
        responses: {
          '200': {
            ...iiifJson('The manifest; Content-Location is its signed URL (its `id`).', ['@context', 'id', 'type', 'items'], 'Manifest'),
            headers: { 'Content-Location': { required: true, description: 'The signed manifest URL.', schema: { type: 'string' } } },
          },
          '400': problem('invalid_iiif_request: ttl out of range.'),
          '401': unauthorized,
          '404': problem('job_not_found: unknown, or another account’s.'),
          '409': problem('job_not_done (retryable), job_failed or job_cancelled.'),
          '410': problem('result_expired: after expires_at.'),
          '429': rateLimited,
          '503': databaseOrStorageUnavailable,
        },
      },
    },
    [`${signed}/manifest`]: {
      parameters: [JOB_ID_PARAMETER, TOKEN_PARAMETER],
      get: {
        operationId: 'getSignedIiifManifest',
        security: [],
        summary: 'The manifest at its signed URL (no API key)',
        responses: { '200': iiifJson('The manifest.', ['@context', 'id', 'type', 'items'], 'Manifest'), ...iiifSigned },
      },
    },
    [`${signed}/pages/{page}/{granularity}`]: {
      parameters: [
        JOB_ID_PARAMETER,
        TOKEN_PARAMETER,
        PAGE_PARAMETER,
        { name: 'granularity', in: 'path', required: true, schema: { enum: ['lines', 'words'] } },
      ],
      get: {
        operationId: 'getIiifAnnotations',
        security: [],
        summary: 'A page’s lines or words as W3C Web Annotations (an AnnotationPage, motivation supplementing)',
        responses: { '200': iiifJson('The annotation page.', ['@context', 'id', 'type', 'items'], 'AnnotationPage'), ...iiifSigned },
      },
    },
    [`${signed}/search`]: {
      parameters: [JOB_ID_PARAMETER, TOKEN_PARAMETER],
      get: {
        operationId: 'searchIiif',
        security: [],
        summary: 'IIIF Content Search 2 over the job’s text: lines containing `q` (case and diacritics ignored)',
        parameters: [{ name: 'q', in: 'query', required: false, schema: { type: 'string' } }],
        responses: { '200': iiifJson('The matches, at most 1,000.', ['@context', 'id', 'type', 'items'], 'AnnotationPage'), ...iiifSigned },
      },
    },
    [`${signed}/image/{page}`]: {
      parameters: [JOB_ID_PARAMETER, TOKEN_PARAMETER, PAGE_PARAMETER],
      get: {
        operationId: 'getIiifImageBase',
        security: [],
        summary: 'The Image API service’s base URI: 303 to its info.json',
        responses: {
          '303': { description: 'See info.json.', headers: { Location: { required: true, schema: { type: 'string' } } } },
          ...iiifSigned,
        },
      },
    },
    [`${signed}/image/{page}/info.json`]: {
      parameters: [JOB_ID_PARAMETER, TOKEN_PARAMETER, PAGE_PARAMETER],
      get: {
        operationId: 'getIiifImageInfo',
        security: [],
        summary: 'The page image’s IIIF Image API 3 information (ImageService3, level1 with extras)',
        responses: {
          '200': {
            description: 'The image information.',
            content: Object.fromEntries(
              ['application/ld+json', 'application/json'].map((type) => [
                type,
                { schema: { type: 'object', required: ['@context', 'id', 'type', 'protocol', 'profile', 'width', 'height'] } },
              ]),
            ),
          },
          ...iiifSigned,
        },
      },
    },
    [`${signed}/image/{page}/{region}/{size}/{rotation}/{file}`]: {
      parameters: [
        JOB_ID_PARAMETER,
        TOKEN_PARAMETER,
        PAGE_PARAMETER,
        ...['region', 'size', 'rotation', 'file'].map((name) => ({ name, in: 'path', required: true, schema: { type: 'string' } })),
      ],
      get: {
        operationId: 'getIiifImage',
        security: [],
        summary:
          'The page image cut and scaled: region (full, square, x,y,w,h, pct:…), size (max, w,, ,h, w,h, !w,h, pct:n, ^…), rotation (0, 90, 180, 270, ! mirrors), quality.format (default, color, gray; jpg, png)',
        responses: {
          '200': {
            description: 'The image.',
            content: {
              'image/jpeg': { schema: { type: 'string', format: 'binary' } },
              'image/png': { schema: { type: 'string', format: 'binary' } },
            },
          },
          '400': problem('invalid_iiif_request: a malformed or impossible region, size, rotation or quality.format.'),
          '501': problem('iiif_feature_not_supported: arbitrary rotation, bitonal, or a format other than jpg and png.'),
          ...iiifSigned,
        },
      },
    },
  };
}

export function openApiDocument(baseUrl: string) {
  return {
    openapi: '3.1.0',
    info: {
      title: 'Handwriting recognition job service',
      version: '1.0.0',
      description:
        'Submit a ZIP of page scans; get PageXML, ALTO and a searchable PDF/A back, as an asynchronous job with polling, signed callbacks and cancel.',
    },
    servers: [{ url: baseUrl }],
    security: [{ ApiKeyHeader: [] }, { BearerAuth: [] }],
    paths: {
      '/v1/process-scan': {
        post: {
          operationId: 'submitScan',
          summary: 'Submit a scan (a ZIP of page images) as a job',
          parameters: [
            {
              name: 'Idempotency-Key',
              in: 'header',
              required: false,
              schema: { type: 'string', maxLength: 255 },
              description: 'The same key from the same account within 24 h returns the original job; with a different upload: 409.',
            },
          ],
          requestBody: {
            required: true,
            content: {
              'multipart/form-data': {
                schema: {
                  type: 'object',
                  required: ['scan_zip'],
                  properties: {
                    scan_zip: {
                      type: 'string',
                      format: 'binary',
                      description:
                        "One image per page (JPEG, PNG, TIFF, WebP, JPEG 2000); not password-protected. A PageXML (2013/2019) or ALTO (v2-v4) file with the same path and name as an image but the extension .xml is that page's layout: its regions, lines and reading order are kept instead of detected ones (docs/intake.md).",
                    },
                    llm_tier: { type: 'string', enum: [...LLM_TIERS], default: 'balanced' },
                    preset: { type: 'string', enum: [...PRESETS], default: 'generic' },
                    webhook_url: { type: 'string', format: 'uri', description: 'HTTPS address for the callback; empty means none.' },
                    pipeline_steps: {
                      type: 'string',
                      default: 'all',
                      description:
                        '`all` or a comma list from layout,recognition,correction,export; export always runs; each step needs the ones before it.',
                    },
                    pdf_format: { type: 'string', enum: [...PDF_FORMATS], default: 'pdfa-2b' },
                    model: {
                      type: 'string',
                      description:
                        '`default` (the shipped recognizer) or the id of one of the account’s ready models (GET /v1/models); ' +
                        'anything else: 400 invalid_model, a model not ready: 400 model_not_ready. Absent or empty: the account’s ' +
                        'default model (GET /v1/account/default-model). The job records the model it reads with (docs/models.md).',
                    },
                  },
                },
              },
            },
          },
          responses: {
            '202': {
              description: 'Accepted: the job is queued.',
              headers: { Location: { schema: { type: 'string' } } },
              content: { 'application/json': { schema: { $ref: '#/components/schemas/Submission' } } },
            },
            '400': problem(
              'Invalid input (e.g. a password-protected ZIP, no images, an unknown option value; invalid_model or model_not_ready for `model`).',
            ),
            '401': unauthorized,
            '408': problem('request_body_too_slow: the upload arrived slower than the slowest rate the service waits for; retry.'),
            '409': problem('The Idempotency-Key was used for a different request.'),
            '413': problem('The upload is larger than the service takes (the detail says the limit in bytes).'),
            '415': problem('The body is not multipart/form-data.'),
            '429': {
              ...problem(
                'rate_limited: the key sent requests faster than its rate limit; too_many_active_jobs or too_many_queued_pages: ' +
                  'the account has as many unfinished jobs or unprocessed pages (this upload included) as it may; ' +
                  'retry after Retry-After seconds.',
              ),
              headers: retryAfter,
            },
            '503': {
              ...problem(
                'insufficient_storage: the service is low on disk space for uploads; database_unavailable: ' +
                  'the service cannot reach its database at the moment (any route may answer so); storage_unavailable: it cannot ' +
                  'reach its file storage (an S3 bucket) at the moment; retry after Retry-After seconds.',
              ),
              headers: retryAfter,
            },
          },
        },
      },
      '/v1/process-scan/{job_id}': {
        parameters: [JOB_ID_PARAMETER],
        get: {
          operationId: 'getJobStatus',
          summary: 'Get job status',
          responses: {
            '200': {
              description: 'The job status.',
              content: { 'application/json': { schema: { $ref: '#/components/schemas/JobStatus' } } },
            },
            '401': unauthorized,
            '429': rateLimited,
            '503': databaseUnavailable,
            '404': problem('Unknown job, or another account’s.'),
          },
        },
        delete: {
          operationId: 'cancelJob',
          summary: 'Cancel a queued or processing job',
          responses: {
            '200': {
              description: 'The job status (state cancelled); also for a job already cancelled.',
              content: { 'application/json': { schema: { $ref: '#/components/schemas/JobStatus' } } },
            },
            '401': unauthorized,
            '429': rateLimited,
            '503': databaseUnavailable,
            '404': problem('Unknown job, or another account’s.'),
            '409': problem('The job has already finished (done or failed).'),
          },
        },
      },
      '/v1/process-scan/{job_id}/result': {
        parameters: [JOB_ID_PARAMETER],
        get: {
          operationId: 'getJobResult',
          summary: 'Download the result archive (ZIP)',
          description:
            'Answers 200 with the archive, or, when the service keeps results in object storage (S3) and sends clients ' +
            'there, 302 to a short-lived presigned URL of the archive. Follow the redirect without the ' +
            'X-API-Key header: the URL carries its own authorization and expires within minutes (fetch a new one ' +
            'from here when it has).',
          responses: {
            '200': {
              description: 'The result archive.',
              headers: {
                'Content-Length': { schema: { type: 'integer' } },
                'Content-Disposition': { schema: { type: 'string' } },
              },
              content: { 'application/zip': { schema: { type: 'string', format: 'binary' } } },
            },
            '302': {
              description:
                'The archive is in object storage: GET the Location, a presigned URL valid for a few minutes ' +
                '(5 by default, never past expires_at), which answers the ZIP with the same Content-Disposition.',
              headers: {
                Location: { schema: { type: 'string', format: 'uri' } },
                'Cache-Control': { schema: { type: 'string', const: 'no-store' } },
              },
            },
            '401': unauthorized,
            '429': rateLimited,
            '503': databaseOrStorageUnavailable,
            '404': problem('Unknown job, or another account’s.'),
            '409': problem(
              'job_not_done (retryable): the job is queued or processing, poll until it is done; job_failed or job_cancelled (not retryable): the job ended without a result.',
            ),
            '410': problem('The result has expired (after expires_at).'),
          },
        },
      },
      '/v1/process-scan/{job_id}/events': {
        parameters: [JOB_ID_PARAMETER],
        get: {
          operationId: 'getJobEvents',
          summary: 'The job’s event history (for auditors)',
          responses: {
            '200': {
              description: 'Every event of the job, in order.',
              content: { 'application/json': { schema: { $ref: '#/components/schemas/JobEvents' } } },
            },
            '401': unauthorized,
            '429': rateLimited,
            '503': databaseUnavailable,
            '404': problem('Unknown job, or another account’s.'),
          },
        },
      },
      '/v1/process-scan/{job_id}/pages/{page}': {
        parameters: [JOB_ID_PARAMETER, PAGE_PARAMETER],
        get: {
          operationId: 'getPage',
          summary: 'A done job’s page: its lines with the machine’s reading and the corrections',
          description:
            'Each line with its id (as in the result’s PageXML and ALTO), outline, baseline, the machine’s text and confidence, ' +
            'the corrected text if any, and the machine’s words; the page’s text version (docs/corrections.md).',
          responses: {
            '200': { description: 'The page.', content: { 'application/json': { schema: { $ref: '#/components/schemas/Page' } } } },
            '401': unauthorized,
            '404': problem('job_not_found (unknown, or another account’s) or unknown_page.'),
            '409': problem('job_not_done (retryable), job_failed or job_cancelled: the job has no text to read.'),
            '410': problem('result_expired: after expires_at.'),
            '429': rateLimited,
            '503': databaseOrStorageUnavailable,
          },
        },
      },
      '/v1/process-scan/{job_id}/pages/{page}/text': {
        parameters: [JOB_ID_PARAMETER, PAGE_PARAMETER],
        put: {
          operationId: 'correctPageText',
          summary: 'Correct lines of a done job’s page',
          description:
            'Only the lines that change, by id. Each save is an event (PageTextCorrected: the page, each line’s text before and ' +
            'after, who: the API key’s label or the portal user’s e-mail); the machine’s reading stays. The result archive is ' +
            'exported again with the corrections a moment later, same file names (docs/corrections.md). Billing does not change.',
          requestBody: {
            required: true,
            content: { 'application/json': { schema: { $ref: '#/components/schemas/PageCorrection' } } },
          },
          responses: {
            '200': {
              description: 'The page as it reads now, with its text version.',
              content: { 'application/json': { schema: { $ref: '#/components/schemas/Page' } } },
            },
            '400': problem(
              'invalid_correction_body, line_text_too_long (over 2,000 characters) or line_text_invalid_characters ' +
                '(control characters, tabs, line breaks).',
            ),
            '401': unauthorized,
            '404': problem('job_not_found (unknown, or another account’s), unknown_page or unknown_line.'),
            '409': problem('job_not_done (retryable), job_failed or job_cancelled: only a done job’s text is corrected.'),
            '410': problem('result_expired: after expires_at a job can no longer be corrected.'),
            '415': problem('unsupported_media_type: the body is not application/json.'),
            '429': rateLimited,
            '503': databaseOrStorageUnavailable,
          },
        },
      },
      ...iiifPaths(),
      '/v1/process-scan/{job_id}/timeline': {
        parameters: [JOB_ID_PARAMETER],
        get: {
          operationId: 'getJobTimeline',
          summary: 'The job’s history for people: who submitted, pages done, corrections, callbacks',
          description: 'Actors by API key label or portal user e-mail, never an id. The raw events are at …/events.',
          responses: {
            '200': {
              description: 'The timeline, oldest first.',
              content: { 'application/json': { schema: { $ref: '#/components/schemas/JobTimeline' } } },
            },
            '401': unauthorized,
            '404': problem('Unknown job, or another account’s.'),
            '429': rateLimited,
            '503': databaseUnavailable,
          },
        },
      },
      '/v1/process-scan/{job_id}/models': {
        parameters: [JOB_ID_PARAMETER],
        post: {
          operationId: 'trainModelFromJob',
          summary: 'Train a model on a done job’s corrected pages',
          description:
            'The ground truth is written from the job’s page images and its corrected lines; a page’s untouched lines count only ' +
            'where the page is in checked_pages. The same line rules and the same 20 lines at least as an upload (docs/models.md).',
          requestBody: {
            required: false,
            content: { 'application/json': { schema: { $ref: '#/components/schemas/JobTraining' } } },
          },
          responses: {
            '202': {
              description: 'Accepted: the training is queued.',
              headers: { Location: { schema: { type: 'string' } } },
              content: { 'application/json': { schema: { $ref: '#/components/schemas/ModelSubmission' } } },
            },
            '400': problem(
              'invalid_training_request, no_corrected_pages, no_usable_lines, too_few_lines, invalid_label, invalid_model or ' +
                'model_not_ready (base_model).',
            ),
            '401': unauthorized,
            '404': problem('job_not_found: unknown, or another account’s.'),
            '409': problem('job_not_done (retryable), job_failed or job_cancelled.'),
            '410': problem('result_expired: after expires_at.'),
            '415': problem('unsupported_media_type: the body is not application/json.'),
            '429': rateLimited,
            '503': {
              ...problem(
                'training_unavailable: no trainer can run for this service (not retryable); database_unavailable or ' +
                  'storage_unavailable: retry after Retry-After seconds.',
              ),
              headers: {
                'Retry-After': {
                  required: false,
                  description: 'Seconds to wait, where a retry can help.',
                  schema: { type: 'string', pattern: '^[0-9]+$' },
                },
              },
            },
          },
        },
      },
      '/v1/search': {
        get: {
          operationId: 'search',
          summary: "Find words and phrases in the calling account's done jobs (docs/search.md)",
          description:
            'Full-text search over the lines of every done job of the account that has not expired: the machine’s reading with ' +
            'its words’ alternative readings, or a person’s correction where a line was corrected. Diacritics and case are ' +
            'ignored; "quoted words" are a phrase, `or` between words finds either, `-word` excludes; `fuzzy` forgives typos. ' +
            'Hits come best first, with the page link, the line marked and the matched word’s box.',
          parameters: [
            {
              name: 'q',
              in: 'query',
              required: true,
              schema: { type: 'string', minLength: 1, maxLength: 200 },
              description: 'The words to find.',
            },
            {
              name: 'fuzzy',
              in: 'query',
              required: false,
              schema: { type: 'string', enum: ['0', '1', '2'], default: '0' },
              description: '0: the words as written (diacritics and case aside); 1: close spellings (a typo or two); 2: looser still.',
            },
            { name: 'job_id', in: 'query', required: false, schema: uuid, description: 'Only this job.' },
            {
              name: 'limit',
              in: 'query',
              required: false,
              schema: { type: 'string', pattern: '^[0-9]{1,3}$', default: '20' },
              description: 'Hits per answer, 1 to 100.',
            },
            {
              name: 'cursor',
              in: 'query',
              required: false,
              schema: { type: 'string' },
              description: 'next_cursor of the previous answer.',
            },
          ],
          responses: {
            '200': { description: 'Hits.', content: { 'application/json': { schema: { $ref: '#/components/schemas/SearchResults' } } } },
            '400': problem('invalid_search_request: no q, one too long, or a bad fuzzy, job_id, limit or cursor.'),
            '401': unauthorized,
            '429': rateLimited,
            '503': databaseUnavailable,
          },
        },
      },
      '/v1/usage': {
        get: {
          operationId: 'getUsage',
          summary: 'Billed pages (done jobs only) and trained lines (ready models) of the calling account',
          parameters: [
            {
              name: 'from',
              in: 'query',
              required: false,
              schema: { type: 'string' },
              description: 'ISO 8601 date or timestamp (inclusive).',
            },
            {
              name: 'to',
              in: 'query',
              required: false,
              schema: { type: 'string' },
              description: 'ISO 8601 date or timestamp (exclusive).',
            },
          ],
          responses: {
            '200': { description: 'Usage.', content: { 'application/json': { schema: { $ref: '#/components/schemas/Usage' } } } },
            '400': problem('An invalid date.'),
            '401': unauthorized,
            '429': rateLimited,
            '503': databaseUnavailable,
          },
        },
      },
      '/v1/models': {
        post: {
          operationId: 'trainModel',
          summary: 'Upload ground truth and queue the training of a model on it',
          description:
            'A ZIP of page images with their PageXML (2013/2019) or ALTO (v2-v4) files carrying each line’s outline and text, ' +
            'as Transkribus, eScriptorium and this service’s result archive export them (docs/models.md). Checked as a scan is ' +
            '(limits, paths, bombs, XML safety); lines without text, outside the image, too small or with characters no model ' +
            'can learn are left out and counted; the answer names what was kept.',
          requestBody: {
            required: true,
            content: {
              'multipart/form-data': {
                schema: {
                  type: 'object',
                  required: ['training_zip'],
                  properties: {
                    training_zip: {
                      type: 'string',
                      format: 'binary',
                      description:
                        'Page images with their PageXML or ALTO files, paired by name (beside the image, or the image the file names).',
                    },
                    label: { type: 'string', maxLength: 100, description: 'A name for the model (at most 100 characters).' },
                    base_model: {
                      type: 'string',
                      default: 'default',
                      description: '`default` or the id of one of the account’s ready models, to train on from it.',
                    },
                  },
                },
              },
            },
          },
          responses: {
            '202': {
              description: 'Accepted: the training is queued.',
              headers: { Location: { schema: { type: 'string' } } },
              content: { 'application/json': { schema: { $ref: '#/components/schemas/ModelSubmission' } } },
            },
            '400': problem(
              'Invalid input: a ZIP refused as a scan would be, page_without_layout, no_usable_lines, too_few_lines, ' +
                'unlearnable_characters, training_zip_missing, invalid_label, invalid_model or model_not_ready (base_model).',
            ),
            '401': unauthorized,
            '408': problem('request_body_too_slow: the upload arrived slower than MIN_BODY_BYTES_PER_SECOND; retry.'),
            '413': problem('The upload is larger than MAX_UPLOAD_BYTES.'),
            '415': problem('The body is not multipart/form-data.'),
            '429': rateLimited,
            '503': {
              ...problem(
                'training_unavailable: no trainer can run for this service (the detail says what an operator installs; not ' +
                  'retryable); insufficient_storage, database_unavailable or storage_unavailable: retry after Retry-After seconds.',
              ),
              headers: {
                'Retry-After': {
                  required: false,
                  description: 'Seconds to wait, where a retry can help.',
                  schema: { type: 'string', pattern: '^[0-9]+$' },
                },
              },
            },
          },
        },
        get: {
          operationId: 'listModels',
          summary: 'The account’s models, newest first',
          responses: {
            '200': {
              description: 'The account’s models (at most 1000, newest first).',
              content: { 'application/json': { schema: { $ref: '#/components/schemas/ModelList' } } },
            },
            '401': unauthorized,
            '429': rateLimited,
            '503': databaseUnavailable,
          },
        },
      },
      '/v1/models/{model_id}': {
        parameters: [MODEL_ID_PARAMETER],
        get: {
          operationId: 'getModel',
          summary: 'A model: its state, training progress, figures, warnings',
          responses: {
            '200': {
              description: 'The model.',
              content: { 'application/json': { schema: { $ref: '#/components/schemas/ModelStatus' } } },
            },
            '401': unauthorized,
            '429': rateLimited,
            '503': databaseUnavailable,
            '404': problem('Unknown model, or another account’s.'),
          },
        },
        delete: {
          operationId: 'deleteModel',
          summary: 'Cancel a queued or training model, or retire a ready one',
          responses: {
            '200': {
              description:
                'The model (state cancelled or retired); also for a model already cancelled or retired. A retired model takes no new jobs.',
              content: { 'application/json': { schema: { $ref: '#/components/schemas/ModelStatus' } } },
            },
            '401': unauthorized,
            '429': rateLimited,
            '503': databaseUnavailable,
            '404': problem('Unknown model, or another account’s.'),
            '409': problem('model_already_finished: the training failed; there is nothing to cancel or retire.'),
          },
        },
      },
      '/v1/models/{model_id}/events': {
        parameters: [MODEL_ID_PARAMETER],
        get: {
          operationId: 'getModelEvents',
          summary: 'The model’s event history (for auditors)',
          responses: {
            '200': {
              description: 'Every event of the model, in order.',
              content: { 'application/json': { schema: { $ref: '#/components/schemas/ModelEvents' } } },
            },
            '401': unauthorized,
            '429': rateLimited,
            '503': databaseUnavailable,
            '404': problem('Unknown model, or another account’s.'),
          },
        },
      },
      '/v1/account/default-model': {
        get: {
          operationId: 'getDefaultModel',
          summary: 'The account’s default model: the one a submission that names no model reads with',
          responses: {
            '200': {
              description: 'The model chosen, and the one submissions without `model` read with now.',
              content: { 'application/json': { schema: { $ref: '#/components/schemas/DefaultModel' } } },
            },
            '401': unauthorized,
            '429': rateLimited,
            '503': databaseUnavailable,
          },
        },
        put: {
          operationId: 'chooseDefaultModel',
          summary: 'Choose the account’s default model',
          description:
            'From now on a submission without `model` (or with it empty) reads with this model; `default` goes back to the ' +
            'shipped recognizer. A ready model of the account only; a default model retired later is read as `default` ' +
            '(docs/models.md). Choosing the same model again changes nothing.',
          requestBody: {
            required: true,
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  additionalProperties: false,
                  required: ['model'],
                  properties: { model: { type: 'string', description: '`default` or the id of one of the account’s ready models.' } },
                },
              },
            },
          },
          responses: {
            '200': {
              description: 'The choice, as GET answers it.',
              content: { 'application/json': { schema: { $ref: '#/components/schemas/DefaultModel' } } },
            },
            '400': problem(
              'invalid_default_model_request (not {"model": …}), invalid_model (no such model of the account) or model_not_ready.',
            ),
            '401': unauthorized,
            '415': problem('The body is not application/json.'),
            '429': rateLimited,
            '503': databaseUnavailable,
          },
        },
      },
      '/healthz': {
        get: {
          operationId: 'health',
          security: [],
          responses: {
            '200': {
              description: 'The process is alive.',
              content: { 'application/json': { schema: { $ref: '#/components/schemas/Health' } } },
            },
          },
        },
      },
      '/readyz': {
        get: {
          operationId: 'ready',
          security: [],
          responses: {
            '200': {
              description: 'Ready: the database answers.',
              content: { 'application/json': { schema: { $ref: '#/components/schemas/Health' } } },
            },
            '503': { description: 'Not ready.', content: { 'application/json': { schema: { $ref: '#/components/schemas/Health' } } } },
          },
        },
      },
      '/v1/openapi.json': {
        get: {
          operationId: 'openapi',
          security: [],
          responses: { '200': { description: 'This document.', content: { 'application/json': { schema: { type: 'object' } } } } },
        },
      },
    },
    webhooks: {
      jobFinished: {
        post: {
          summary: 'Callback when a job reaches done or failed',
          parameters: [
            { name: 'X-SVC-Event', in: 'header', required: true, schema: { type: 'string', enum: ['job.completed', 'job.failed'] } },
            {
              name: 'X-SVC-Signature',
              in: 'header',
              required: true,
              schema: { type: 'string', pattern: '^[0-9a-f]{64}$' },
              description: 'Lowercase hex HMAC-SHA256 of the raw body, keyed with the account webhook secret.',
            },
            { name: 'X-SVC-Delivery', in: 'header', required: true, schema: uuid },
          ],
          requestBody: { content: { 'application/json': { schema: { $ref: '#/components/schemas/Callback' } } } },
          responses: { '200': { description: 'Any 2xx ends the delivery; anything else is retried after about 1, 5, 25, 125 and 625 s.' } },
        },
      },
    },
    components: {
      securitySchemes: {
        ApiKeyHeader: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
        BearerAuth: { type: 'http', scheme: 'bearer' },
      },
      schemas: {
        Problem: {
          type: 'object',
          required: ['type', 'title', 'status', 'detail', 'code', 'retryable'],
          properties: {
            type: { type: 'string' },
            title: { type: 'string' },
            status: { type: 'integer' },
            detail: { type: 'string' },
            code: { type: 'string', pattern: '^[a-z0-9_]+$' },
            retryable: {
              type: 'boolean',
              description: 'Whether the same request, sent again unchanged (after Retry-After where given), may succeed.',
            },
            instance: { type: 'string' },
          },
        },
        Submission: {
          type: 'object',
          additionalProperties: false,
          required: ['job_id', 'state', 'page_count', 'created_at', 'expires_at', 'status_url', 'result_url'],
          properties: {
            job_id: uuid,
            state: { const: 'queued' },
            page_count: { type: 'integer', minimum: 1 },
            created_at: timestamp,
            expires_at: timestamp,
            status_url: { type: 'string', format: 'uri' },
            result_url: { type: 'string', format: 'uri' },
          },
        },
        JobStatus: {
          type: 'object',
          additionalProperties: false,
          required: [
            'job_id',
            'state',
            'page_count',
            'pages_done',
            'current_step',
            'created_at',
            'started_at',
            'finished_at',
            'expires_at',
            'error_message',
            'warning_message',
            'status_url',
            'callback',
          ],
          properties: {
            job_id: uuid,
            state: { type: 'string', enum: ['queued', 'processing', 'done', 'failed', 'cancelled'] },
            page_count: { type: 'integer', minimum: 1 },
            pages_done: { type: 'integer', minimum: 0 },
            current_step: { enum: ['layout', 'recognition', 'correction', 'export', null] },
            created_at: timestamp,
            started_at: nullableTimestamp,
            finished_at: nullableTimestamp,
            expires_at: timestamp,
            error_message: { type: ['string', 'null'] },
            warning_message: { type: ['string', 'null'] },
            status_url: { type: 'string', format: 'uri' },
            result_url: { type: 'string', format: 'uri', description: 'Present only when state is done.' },
            callback: {
              description: 'Delivery state of the callback; null without webhook_url.',
              oneOf: [
                { type: 'null' },
                {
                  type: 'object',
                  additionalProperties: false,
                  required: ['state', 'attempts', 'last_status', 'next_attempt_at'],
                  properties: {
                    state: { enum: ['waiting', 'pending', 'retrying', 'delivered', 'abandoned', 'not_sent'] },
                    attempts: { type: 'integer', minimum: 0 },
                    last_status: { type: ['integer', 'null'] },
                    next_attempt_at: nullableTimestamp,
                  },
                },
              ],
            },
          },
          if: { properties: { state: { const: 'done' } } },
          then: { required: ['result_url'] },
          else: { not: { required: ['result_url'] } },
        },
        JobEvents: {
          type: 'object',
          required: ['job_id', 'events'],
          properties: {
            job_id: uuid,
            events: {
              type: 'array',
              items: {
                type: 'object',
                required: ['position', 'version', 'type', 'data', 'metadata', 'recorded_at'],
                properties: {
                  position: { type: 'string', pattern: '^[0-9]+$' },
                  version: { type: 'integer', minimum: 1 },
                  type: { type: 'string' },
                  data: { type: 'object' },
                  metadata: { type: 'object' },
                  recorded_at: timestamp,
                },
              },
            },
          },
        },
        SearchResults: {
          type: 'object',
          additionalProperties: false,
          required: ['query', 'fuzzy', 'hits', 'next_cursor'],
          properties: {
            query: { type: 'string' },
            fuzzy: { type: 'integer', enum: [0, 1, 2] },
            hits: { type: 'array', items: { $ref: '#/components/schemas/SearchHit' } },
            next_cursor: { type: ['string', 'null'], description: 'Pass as cursor for the next hits; null: no more.' },
          },
        },
        SearchHit: {
          type: 'object',
          additionalProperties: false,
          required: ['job_id', 'page', 'line_id', 'text', 'highlight', 'corrected', 'word', 'score', 'page_url'],
          properties: {
            job_id: uuid,
            page: { type: 'integer', minimum: 1 },
            line_id: { type: 'string', description: 'The line’s id in the page’s PageXML and ALTO and in GET …/pages/{page}.' },
            text: { type: 'string', description: 'The line as it reads now (a person’s correction where there is one).' },
            highlight: { type: 'string', description: 'text, HTML-escaped, with the matched words between <mark> and </mark>.' },
            corrected: { type: 'boolean', description: 'Whether a person corrected the line (it was found by its corrected text).' },
            word: {
              type: ['object', 'null'],
              additionalProperties: false,
              required: ['text', 'box', 'confidence', 'alternative'],
              description: 'The matched word of the machine’s reading, null where none is.',
              properties: {
                text: { type: 'string' },
                box: {
                  type: 'object',
                  additionalProperties: false,
                  required: ['x', 'y', 'width', 'height'],
                  properties: { x: { type: 'number' }, y: { type: 'number' }, width: { type: 'number' }, height: { type: 'number' } },
                },
                confidence: { type: 'number', minimum: 0, maximum: 1 },
                alternative: {
                  type: ['object', 'null'],
                  additionalProperties: false,
                  required: ['text', 'confidence'],
                  description: 'The alternative reading of the word the query found, when it was found through one.',
                  properties: { text: { type: 'string' }, confidence: { type: 'number', minimum: 0, maximum: 1 } },
                },
              },
            },
            score: { type: 'number', description: 'The rank (full-text rank, or trigram similarity with fuzzy).' },
            page_url: { type: 'string', description: 'GET this for the page’s lines (docs/corrections.md).' },
          },
        },
        Usage: {
          type: 'object',
          additionalProperties: false,
          required: ['account_id', 'from', 'to', 'jobs', 'pages', 'models_trained', 'lines_trained', 'correction'],
          properties: {
            account_id: uuid,
            from: nullableTimestamp,
            to: nullableTimestamp,
            jobs: { type: 'integer', minimum: 0, description: 'Done jobs (billed).' },
            pages: { type: 'integer', minimum: 0, description: 'Pages of done jobs (billed).' },
            models_trained: {
              type: 'integer',
              minimum: 0,
              description:
                'Models whose training completed in the period (ready, or retired since); failed and cancelled ones are not billed.',
            },
            lines_trained: {
              type: 'integer',
              minimum: 0,
              description: 'The ground-truth lines those models were trained on (billed; held-out lines not counted).',
            },
            correction: {
              type: 'array',
              description: 'LLM correction usage per provider and model: pages corrected and tokens.',
              items: {
                type: 'object',
                additionalProperties: false,
                required: ['provider', 'model', 'pages', 'input_tokens', 'output_tokens'],
                properties: {
                  provider: { type: 'string' },
                  model: { type: 'string' },
                  pages: { type: 'integer', minimum: 0 },
                  input_tokens: { type: 'integer', minimum: 0 },
                  output_tokens: { type: 'integer', minimum: 0 },
                },
              },
            },
          },
        },
        ModelSubmission: {
          type: 'object',
          additionalProperties: false,
          required: ['model_id', 'state', 'label', 'created_at', 'status_url', 'lines_total', 'pages_total'],
          properties: {
            model_id: uuid,
            state: { const: 'queued' },
            label: { type: ['string', 'null'] },
            created_at: timestamp,
            status_url: { type: 'string', format: 'uri' },
            lines_total: { type: 'integer', minimum: 1, description: 'Lines kept for training.' },
            pages_total: { type: 'integer', minimum: 1 },
          },
        },
        ModelStatus: {
          type: 'object',
          additionalProperties: false,
          required: [
            'model_id',
            'label',
            'state',
            'base_model',
            'created_at',
            'started_at',
            'finished_at',
            'pages_total',
            'lines_total',
            'lines_skipped',
            'progress',
            'figures',
            'warnings',
            'error_message',
            'status_url',
          ],
          properties: {
            model_id: uuid,
            label: { type: ['string', 'null'] },
            state: { type: 'string', enum: [...MODEL_STATES] },
            base_model: { type: 'string', description: '`default` or the id of the model it was trained on from.' },
            created_at: timestamp,
            started_at: nullableTimestamp,
            finished_at: nullableTimestamp,
            pages_total: { type: 'integer', minimum: 1 },
            lines_total: { type: 'integer', minimum: 1 },
            lines_skipped: {
              type: 'object',
              additionalProperties: false,
              description: 'Lines of the ground truth left out of training, by why.',
              required: ['no_text', 'no_geometry', 'outside_image', 'too_small', 'unlearnable_characters'],
              properties: {
                no_text: { type: 'integer', minimum: 0 },
                no_geometry: { type: 'integer', minimum: 0 },
                outside_image: { type: 'integer', minimum: 0 },
                too_small: { type: 'integer', minimum: 0 },
                unlearnable_characters: { type: 'integer', minimum: 0 },
              },
            },
            progress: {
              description: 'The last epoch the trainer recorded, and every epoch so far; null before the first.',
              oneOf: [
                { type: 'null' },
                {
                  type: 'object',
                  additionalProperties: false,
                  required: ['epoch', 'train_loss', 'validation_cer', 'history'],
                  properties: {
                    epoch: { type: 'integer', minimum: 0 },
                    train_loss: fraction,
                    validation_cer: fraction,
                    history: {
                      type: 'array',
                      items: {
                        type: 'object',
                        additionalProperties: false,
                        required: ['epoch', 'train_loss', 'validation_cer', 'recorded_at'],
                        properties: {
                          epoch: { type: 'integer', minimum: 0 },
                          train_loss: fraction,
                          validation_cer: fraction,
                          recorded_at: timestamp,
                        },
                      },
                    },
                  },
                },
              ],
            },
            figures: {
              description:
                'Measured on the held-out lines with the base model (before) and the trained one (after); null until trained. ' +
                '`not_better`: it does not read them better than its base (kept, and said in warnings).',
              oneOf: [
                { type: 'null' },
                {
                  type: 'object',
                  additionalProperties: false,
                  required: [
                    'cer_before',
                    'cer_after',
                    'wer_before',
                    'wer_after',
                    'lines_train',
                    'lines_validation',
                    'training_minutes',
                    'not_better',
                  ],
                  properties: {
                    cer_before: fraction,
                    cer_after: fraction,
                    wer_before: fraction,
                    wer_after: fraction,
                    lines_train: { type: 'integer', minimum: 0 },
                    lines_validation: { type: 'integer', minimum: 0 },
                    training_minutes: fraction,
                    not_better: { type: 'boolean' },
                  },
                },
              ],
            },
            warnings: { type: 'array', items: { type: 'string' } },
            error_message: { type: ['string', 'null'] },
            status_url: { type: 'string', format: 'uri' },
          },
        },
        ModelList: {
          type: 'object',
          additionalProperties: false,
          required: ['models'],
          properties: { models: { type: 'array', items: { $ref: '#/components/schemas/ModelStatus' } } },
        },
        DefaultModel: {
          type: 'object',
          additionalProperties: false,
          required: ['model', 'model_state', 'effective_model', 'chosen_at'],
          properties: {
            model: { type: 'string', description: '`default` or the id of the model chosen.' },
            model_state: {
              type: ['string', 'null'],
              enum: [...MODEL_STATES, null],
              description: 'The chosen model’s state; null for `default`.',
            },
            effective_model: {
              type: 'string',
              description: 'What a submission without `model` reads with now: the chosen model while it is ready, else `default`.',
            },
            chosen_at: { type: ['string', 'null'], format: 'date-time', description: 'When it was chosen; null: never chosen.' },
          },
        },
        ModelEvents: {
          type: 'object',
          required: ['model_id', 'events'],
          properties: {
            model_id: uuid,
            events: { $ref: '#/components/schemas/JobEvents/properties/events' },
          },
        },
        Page: {
          type: 'object',
          additionalProperties: false,
          required: ['job_id', 'page', 'name', 'image', 'version', 'corrected_at', 'corrected_lines', 'text', 'lines'],
          properties: {
            job_id: uuid,
            page: { type: 'integer', minimum: 1 },
            name: { type: 'string', description: 'The image’s path in the submitted ZIP.' },
            image: {
              type: 'object',
              additionalProperties: false,
              required: ['width', 'height'],
              properties: { width: { type: 'integer' }, height: { type: 'integer' } },
            },
            version: { type: 'integer', minimum: 0, description: 'The page’s text version: its number of saved corrections (0: none).' },
            corrected_at: nullableTimestamp,
            corrected_lines: { type: 'integer', minimum: 0, description: 'Lines whose text differs from the machine’s reading.' },
            text: { type: 'string', description: 'The page’s current text, one line of text a line, in reading order.' },
            lines: {
              type: 'array',
              items: {
                type: 'object',
                additionalProperties: false,
                required: [
                  'id',
                  'region_id',
                  'polygon',
                  'baseline',
                  'text',
                  'machine_text',
                  'corrected_text',
                  'confidence',
                  'words',
                  'correction_refused',
                ],
                properties: {
                  id: { type: 'string', description: 'The line’s id in the result’s PageXML and ALTO.' },
                  region_id: { type: 'string' },
                  polygon: points,
                  baseline: { type: ['array', 'null'], items: point },
                  text: { type: 'string', description: 'What the line reads now: the correction, else the machine’s reading.' },
                  machine_text: { type: 'string' },
                  corrected_text: { type: ['string', 'null'] },
                  confidence: nullableConfidence,
                  words: {
                    type: 'array',
                    description: 'The machine’s words; empty where it read the line as a whole.',
                    items: {
                      type: 'object',
                      additionalProperties: false,
                      required: ['id', 'text', 'polygon', 'confidence'],
                      properties: { id: { type: 'string' }, text: { type: 'string' }, polygon: points, confidence: nullableConfidence },
                    },
                  },
                  correction_refused: {
                    type: ['string', 'null'],
                    description:
                      'Why the correction step’s guard refused the language model’s change to the line (its reading was kept), e.g. "image likelihood lost 3.41 per character, over 2.00"; null when none was refused.',
                  },
                },
              },
            },
          },
        },
        PageCorrection: {
          type: 'object',
          additionalProperties: false,
          required: ['lines'],
          properties: {
            lines: {
              type: 'array',
              minItems: 1,
              maxItems: 1000,
              items: {
                type: 'object',
                additionalProperties: false,
                required: ['id', 'text'],
                properties: {
                  id: { type: 'string', description: 'A line id of the page (GET …/pages/{page}, or the result’s PageXML/ALTO).' },
                  text: { type: 'string', maxLength: 2000, description: 'The line’s new text: one line, no control characters.' },
                },
              },
            },
          },
        },
        JobTimeline: {
          type: 'object',
          additionalProperties: false,
          required: ['job_id', 'entries'],
          properties: {
            job_id: uuid,
            entries: {
              type: 'array',
              items: {
                type: 'object',
                additionalProperties: false,
                required: ['version', 'at', 'type', 'summary', 'actor', 'page'],
                properties: {
                  version: { type: 'integer', description: 'The event’s version in the job’s history (…/events).' },
                  at: timestamp,
                  type: { type: 'string', description: 'The event type, e.g. JobQueued, PageCompleted, PageTextCorrected.' },
                  summary: { type: 'string' },
                  actor: {
                    oneOf: [
                      {
                        type: 'object',
                        additionalProperties: false,
                        required: ['kind', 'label'],
                        properties: { kind: { const: 'api_key' }, label: { type: 'string' } },
                      },
                      {
                        type: 'object',
                        additionalProperties: false,
                        required: ['kind', 'email'],
                        properties: { kind: { const: 'user' }, email: { type: 'string' } },
                      },
                      { type: 'object', additionalProperties: false, required: ['kind'], properties: { kind: { const: 'service' } } },
                    ],
                  },
                  page: { type: ['integer', 'null'] },
                  lines: {
                    type: 'array',
                    description: 'A correction’s lines, each with its text before and after.',
                    items: {
                      type: 'object',
                      additionalProperties: false,
                      required: ['id', 'before', 'after'],
                      properties: { id: { type: 'string' }, before: { type: 'string' }, after: { type: 'string' } },
                    },
                  },
                },
              },
            },
          },
        },
        JobTraining: {
          type: 'object',
          additionalProperties: false,
          properties: {
            pages: {
              type: 'array',
              items: { type: 'integer', minimum: 1 },
              description: 'The pages to train on; absent: every corrected page and every checked page.',
            },
            checked_pages: {
              type: 'array',
              items: { type: 'integer', minimum: 1 },
              description: 'Pages whose untouched lines are right as read: all their lines are trained on.',
            },
            label: { type: 'string', maxLength: 100 },
            base_model: { type: 'string', default: 'default' },
          },
        },
        Health: { type: 'object', required: ['status'], properties: { status: { type: 'string' }, detail: { type: 'string' } } },
        Callback: {
          type: 'object',
          required: ['job_id', 'state', 'page_count', 'event_id', 'event', 'sent_at'],
          properties: {
            job_id: uuid,
            state: { enum: ['done', 'failed'] },
            page_count: { type: 'integer' },
            result_url: { type: 'string', format: 'uri', description: 'Only when state is done.' },
            error_message: { type: ['string', 'null'], description: 'Only when state is failed.' },
            event_id: { ...uuid, description: 'The same on every retry of this delivery.' },
            event: { enum: ['job.completed', 'job.failed'] },
            sent_at: timestamp,
          },
        },
      },
    },
  };
}
