import assert from 'node:assert/strict';
import { test } from 'node:test';
import { INTAKE_ERRORS, IntakeError, isIntakeError, quoteName, uploadTooLargeError } from '../../src/intake/intake-error.ts';

test('every code is snake_case with a 400 status, except the upload size (413)', () => {
  for (const [code, { status, title }] of Object.entries(INTAKE_ERRORS)) {
    assert.match(code, /^[a-z]+(_[a-z0-9]+)*$/);
    assert.equal(status, code === 'upload_too_large' ? 413 : 400, code);
    assert.ok(title.length > 0);
  }
});

test('an IntakeError carries code, status, title, detail and the entry', () => {
  const error = new IntakeError('not_an_image', 'entry "notes.txt" is not an image', { entry: 'notes.txt' });
  assert.ok(error instanceof Error);
  assert.ok(isIntakeError(error));
  assert.equal(error.code, 'not_an_image');
  assert.equal(error.status, 400);
  assert.equal(error.title, 'Entry is not an image');
  assert.equal(error.detail, 'entry "notes.txt" is not an image');
  assert.equal(error.message, error.detail);
  assert.equal(error.entry, 'notes.txt');
  assert.equal(isIntakeError(new Error('x')), false);
});

test('the upload size error is a 413 naming the limit', () => {
  const error = uploadTooLargeError(1000, 'scans.zip');
  assert.equal(error.code, 'upload_too_large');
  assert.equal(error.status, 413);
  assert.match(error.detail, /scans\.zip.*1000-byte limit/);
});

test('names are quoted with control characters escaped, backslashes kept', () => {
  assert.equal(quoteName('C:\\evil.jpg'), '"C:\\evil.jpg"');
  assert.equal(quoteName('a"b\nc'), '"a\\"b\\nc"');
});
