// BLOB_STORE and the S3 settings (README, "Configuration").
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/platform/config.ts';

const problemsOf = (env: Record<string, string>): string[] => {
  try {
    loadConfig(env);
    return [];
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
};

describe('blob store settings', () => {
  test('the filesystem by default, without redirects', () => {
    const config = loadConfig({});
    assert.deepEqual(config.blobs, { store: 'filesystem', s3: null });
    assert.equal(config.results.redirect, false);
    assert.equal(config.results.urlTtlSeconds, 300);
  });

  test('BLOB_STORE=s3 reads the bucket, prefix, endpoint, region, path style and credentials; redirects on', () => {
    const config = loadConfig({
      BLOB_STORE: 's3',
      S3_BUCKET: 'results',
      S3_PREFIX: 'hwr/prod',
      S3_ENDPOINT: 'http://minio:9000',
      S3_PUBLIC_ENDPOINT: 'https://files.example.com',
      S3_FORCE_PATH_STYLE: '1',
      AWS_REGION: 'eu-central-1',
      AWS_ACCESS_KEY_ID: 'id',
      AWS_SECRET_ACCESS_KEY: 'secret',
    });
    assert.deepEqual(config.blobs.s3, {
      bucket: 'results',
      prefix: 'hwr/prod',
      endpoint: 'http://minio:9000',
      publicEndpoint: 'https://files.example.com',
      region: 'eu-central-1',
      forcePathStyle: true,
      credentials: { accessKeyId: 'id', secretAccessKey: 'secret' },
    });
    assert.equal(config.results.redirect, true);
    assert.equal(loadConfig({ BLOB_STORE: 's3', S3_BUCKET: 'b', RESULT_REDIRECT: '0' }).results.redirect, false);
    assert.equal(loadConfig({ BLOB_STORE: 's3', S3_BUCKET: 'b', S3_REGION: 'x', AWS_REGION: 'y' }).blobs.s3?.region, 'x');
    assert.equal(loadConfig({ BLOB_STORE: 's3', S3_BUCKET: 'b' }).blobs.s3?.credentials, null, 'the SDK default chain');
  });

  test('what cannot work is refused at start', () => {
    assert.deepEqual(problemsOf({ BLOB_STORE: 's3' }), ['BLOB_STORE=s3 needs S3_BUCKET']);
    assert.match(problemsOf({ BLOB_STORE: 'gcs' })[0], /BLOB_STORE must be one of filesystem, s3/);
    assert.match(problemsOf({ RESULT_REDIRECT: '1' })[0], /RESULT_REDIRECT=1 needs BLOB_STORE=s3/);
    assert.match(problemsOf({ BLOB_STORE: 's3', S3_BUCKET: 'b', AWS_ACCESS_KEY_ID: 'id' })[0], /go together/);
    assert.match(problemsOf({ BLOB_STORE: 's3', S3_BUCKET: 'b', S3_PREFIX: 'a/../b' })[0], /S3_PREFIX/);
    assert.match(problemsOf({ BLOB_STORE: 's3', S3_BUCKET: 'b', S3_ENDPOINT: 'minio:9000' })[0], /S3_ENDPOINT must be an http\(s\) URL/);
  });
});
