import assert from 'node:assert/strict';
import { test } from 'node:test';
import { signCallbackBody, verifyCallbackSignature } from '../../src/callbacks/signature.ts';

// Computed independently with Python: hmac.new(secret.encode(), body.encode('utf-8'), hashlib.sha256).hexdigest()
const SECRET = '3f7c1e9a5b2d4f6081a3c5e7092b4d6f8a1c3e5f7091b2d4f6a8c0e2f4b6d8a0';
const BODY =
  '{"job_id":"0b9c6a4e-2f7d-4c1a-9e3b-5d8f7a6c1b2e","state":"done","page_count":3,"result_url":"https://hwr.example.org/v1/process-scan/0b9c6a4e-2f7d-4c1a-9e3b-5d8f7a6c1b2e/result","event":"job.completed","note":"Zoé — été"}';
const EXPECTED = 'ecbeef6ed6e6abcb318be7f8891f09f6178e22f678745f6b3a4ed84ce06eb549';

test('known answer: RFC 4231 test case 2', () => {
  assert.equal(
    signCallbackBody('Jefe', 'what do ya want for nothing?'),
    '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843',
  );
});

test('known answer: a callback body keyed with a 64-hex secret used as written (its UTF-8 bytes, not hex-decoded)', () => {
  assert.equal(signCallbackBody(SECRET, Buffer.from(BODY, 'utf8')), EXPECTED);
  assert.equal(signCallbackBody(SECRET, BODY), EXPECTED);
  assert.notEqual(signCallbackBody(SECRET, Buffer.from(BODY, 'latin1')), EXPECTED);
});

test('the signature is lowercase hex of 64 characters', () => {
  assert.match(signCallbackBody(SECRET, '{}'), /^[0-9a-f]{64}$/);
});

test('verification accepts the right signature over the exact bytes only', () => {
  const body = Buffer.from(BODY, 'utf8');
  assert.equal(verifyCallbackSignature(SECRET, body, EXPECTED), true);
  assert.equal(verifyCallbackSignature(SECRET, body, EXPECTED.toUpperCase()), true);
  // Re-serialised JSON (same data, other bytes) does not verify.
  assert.equal(verifyCallbackSignature(SECRET, Buffer.from(JSON.stringify(JSON.parse(BODY), null, 1)), EXPECTED), false);
  assert.equal(verifyCallbackSignature(SECRET, Buffer.concat([body, Buffer.from('\n')]), EXPECTED), false);
  assert.equal(verifyCallbackSignature(SECRET.replace('3f', '3e'), body, EXPECTED), false);
  assert.equal(verifyCallbackSignature(SECRET, body, `${EXPECTED.slice(0, 63)}0`), false);
});

test('verification refuses missing or malformed signatures without throwing', () => {
  for (const signature of [undefined, null, '', `sha256=${EXPECTED}`, EXPECTED.slice(0, 62), `${EXPECTED}00`, 'z'.repeat(64)]) {
    assert.equal(verifyCallbackSignature(SECRET, BODY, signature), false, String(signature));
  }
});
