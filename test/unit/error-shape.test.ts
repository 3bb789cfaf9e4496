// One error shape for the boundaries (domain/errors.ts): every error carries code, message,
// status (from its catalog; null where it has none) and retryable, and the HTTP layer answers
// each with what its catalog says.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type CodedError, isCodedError } from '../../domain/errors.ts';
import { REJECTION_ERRORS, Rejection } from '../../domain/rejections.ts';
import { WEBHOOK_URL_ERRORS, WebhookUrlError } from '../../src/callbacks/webhook-url.ts';
import { ERROR_CATALOGS } from '../../src/errors.ts';
import { ExportError } from '../../src/export/errors.ts';
import { HTTP_PROBLEMS, HttpProblem, problemBody, toProblem } from '../../src/http/problem.ts';
import { INTAKE_ERRORS, IntakeError } from '../../src/intake/intake-error.ts';
import { PipelineError } from '../../src/recognition/page/errors.ts';
import { LAYOUT_ERRORS, LayoutError } from '../../src/recognition/layout/uploaded-layout.ts';
import { isPermanent } from '../../src/workers/mechanics/task-errors.ts';

describe('the catalogs', () => {
  test('every code is snake_case, with an error status or none, and a retryability', () => {
    for (const [heading, catalog] of Object.entries(ERROR_CATALOGS)) {
      assert.ok(Object.keys(catalog).length > 0, heading);
      for (const [code, spec] of Object.entries(catalog)) {
        assert.match(code, /^[a-z]+(_[a-z0-9]+)*$/, `${heading}: ${code}`);
        if (spec.status !== null)
          assert.ok(Number.isInteger(spec.status) && spec.status >= 400 && spec.status < 600, `${heading}: ${code}`);
        assert.equal(typeof spec.retryable, 'boolean', `${heading}: ${code}`);
      }
    }
  });

  test('a code in two catalogs that both give it a status gives the same status and retryability', () => {
    const seen = new Map<string, { heading: string; status: number; retryable: boolean }>();
    for (const [heading, catalog] of Object.entries(ERROR_CATALOGS)) {
      for (const [code, spec] of Object.entries(catalog)) {
        if (spec.status === null) continue;
        const earlier = seen.get(code);
        if (earlier)
          assert.deepEqual(
            [spec.status, spec.retryable],
            [earlier.status, earlier.retryable],
            `${code}: ${earlier.heading} and ${heading}`,
          );
        else seen.set(code, { heading, status: spec.status, retryable: spec.retryable });
      }
    }
    // The uploaded layout's codes are the upload's.
    for (const code of Object.keys(LAYOUT_ERRORS)) assert.ok(code in INTAKE_ERRORS, code);
  });

  test('the codes the HTTP layer answers with belong to one catalog each', () => {
    const answered = [HTTP_PROBLEMS, REJECTION_ERRORS, INTAKE_ERRORS, WEBHOOK_URL_ERRORS].flatMap((catalog) => Object.keys(catalog));
    assert.equal(new Set(answered).size, answered.length);
  });
});

describe('every boundary error has the shape', () => {
  const cases: Array<[string, CodedError, { code: string; status: number | null; retryable: boolean }]> = [
    ['Rejection', new Rejection('job_not_done'), { code: 'job_not_done', status: 409, retryable: true }],
    ['Rejection', new Rejection('unknown_page', 'no page 9'), { code: 'unknown_page', status: 404, retryable: false }],
    ['IntakeError', new IntakeError('upload_too_large', 'too big'), { code: 'upload_too_large', status: 413, retryable: false }],
    ['WebhookUrlError', new WebhookUrlError('not https'), { code: 'invalid_webhook_url', status: 400, retryable: false }],
    ['LayoutError', new LayoutError('layout_invalid', 'not XML'), { code: 'layout_invalid', status: 400, retryable: false }],
    ['PipelineError', new PipelineError('model_invalid', 'no manifest'), { code: 'model_invalid', status: null, retryable: false }],
    [
      'ExportError',
      new ExportError('page_result_missing', 'gone', { pageNumber: 2 }),
      { code: 'page_result_missing', status: null, retryable: true },
    ],
    ['HttpProblem', new HttpProblem('insufficient_storage', 'disk low'), { code: 'insufficient_storage', status: 503, retryable: true }],
    ['HttpProblem', new HttpProblem('job_not_found', 'No job x.'), { code: 'job_not_found', status: 404, retryable: false }],
  ];
  for (const [name, error, expected] of cases) {
    test(`${name} ${expected.code}`, () => {
      assert.ok(error instanceof Error);
      assert.ok(isCodedError(error));
      assert.equal(error.name, name);
      assert.equal(typeof error.message, 'string');
      assert.ok(error.message.length > 0);
      assert.deepEqual({ code: error.code, status: error.status, retryable: error.retryable }, expected);
      // A worker fails a page at once on exactly the errors that say they are not retryable.
      assert.equal(isPermanent(error), !expected.retryable);
    });
  }

  test('a cause is kept', () => {
    const cause = new Error('inner');
    assert.equal(new PipelineError('image_unreadable', 'bad', { cause }).cause, cause);
    assert.equal(new ExportError('page_result_invalid', 'bad', { cause }).cause, cause);
    assert.equal(new IntakeError('invalid_zip', 'bad', { cause }).cause, cause);
  });
});

describe('the HTTP answer of each error', () => {
  test('an error with a status is answered with its code, status, retryability and message', () => {
    for (const error of [
      new Rejection('job_already_finished'),
      new IntakeError('not_an_image', 'entry "a.txt" is not an image', { entry: 'a.txt' }),
      new WebhookUrlError('webhook_url must be an https URL'),
      new LayoutError('layout_unsafe_xml', 'a DTD'),
    ]) {
      const problem = toProblem(error);
      assert.ok(problem, error.code);
      assert.deepEqual(
        { code: problem.code, status: problem.status, retryable: problem.retryable, detail: problem.detail, message: problem.message },
        { code: error.code, status: error.status, retryable: error.retryable, detail: error.message, message: error.message },
      );
      assert.ok(problem.title.length > 0);
    }
  });

  test("titles: the catalog's, else by status for rejections, else a per-throw one", () => {
    assert.equal(toProblem(new IntakeError('zip_bomb', 'x'))?.title, INTAKE_ERRORS.zip_bomb.title);
    assert.equal(toProblem(new Rejection('job_not_found'))?.title, 'Not found');
    assert.equal(toProblem(new Rejection('job_cancelled'))?.title, 'Request conflicts with the job state');
    assert.equal(new HttpProblem('job_not_done', 'x', { title: 'Result not available' }).title, 'Result not available');
    assert.equal(new HttpProblem('unsupported_media_type', 'x').title, 'Unsupported media type');
  });

  test('errors without a status are not answered (the middleware makes them a 500 internal_error)', () => {
    assert.equal(toProblem(new PipelineError('model_invalid', 'x')), null);
    assert.equal(toProblem(new ExportError('image_unsupported', 'x')), null);
    assert.equal(toProblem(new Error('boom')), null);
  });

  test("koa's client errors keep their status as bad_request, a 413 as upload_too_large", () => {
    const parser = Object.assign(new Error('invalid JSON'), { status: 422 });
    assert.deepEqual((({ code, status, retryable }) => ({ code, status, retryable }))(toProblem(parser)!), {
      code: 'bad_request',
      status: 422,
      retryable: false,
    });
    const tooLarge = Object.assign(new Error('too large'), { status: 413 });
    assert.equal(toProblem(tooLarge)?.code, 'upload_too_large');
    assert.equal(toProblem(Object.assign(new Error('server'), { status: 502 })), null);
  });

  test('the problem body carries code, status, detail and retryable, and the request id as instance', () => {
    const problem = new HttpProblem('rate_limited', 'slow down', { headers: { 'Retry-After': '3' } });
    assert.deepEqual(problemBody(problem, 'req-1'), {
      type: 'urn:hwr:problem:rate_limited',
      title: 'Too many requests',
      status: 429,
      detail: 'slow down',
      code: 'rate_limited',
      retryable: true,
      instance: 'urn:hwr:request:req-1',
    });
    assert.equal('instance' in problemBody(problem), false);
    assert.deepEqual(problem.headers, { 'Retry-After': '3' });
  });
});
