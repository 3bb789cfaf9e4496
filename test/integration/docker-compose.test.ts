// No Docker engine here: this parses docker-compose.yml and the Dockerfile and checks
// that they fit the code: the services exist, every variable the hwr services set is
// one src/platform/config.ts reads (and loadConfig accepts the values), the API and the workers
// share the database and the bucket of stored files (no shared volume), and the workers can be scaled.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { parse } from 'yaml';
import { ConfigError, loadConfig } from '../../src/platform/config.ts';

const root = path.resolve(import.meta.dirname, '../..');
const compose = parse(readFileSync(path.join(root, 'docker-compose.yml'), 'utf8'), { merge: true }) as Compose;
const dockerfile = readFileSync(path.join(root, 'Dockerfile'), 'utf8');

interface Service {
  image?: string;
  build?: unknown;
  command?: string[];
  environment?: Record<string, string | number | boolean | null>;
  volumes?: string[];
  ports?: string[];
  depends_on?: Record<string, { condition: string }>;
  deploy?: { replicas?: number };
  healthcheck?: { test: string[] };
  container_name?: string;
}
interface Compose {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
}

/** The variables src/platform/config.ts reads: every `read.<kind>('NAME'` in its source. */
function configVariables(): Set<string> {
  const source = readFileSync(path.join(root, 'src/platform/config.ts'), 'utf8');
  return new Set([...source.matchAll(/read\.\w+\('([A-Z0-9_]+)'/g)].map((match) => match[1]));
}

/** Compose interpolation with the defaults (`${NAME:-default}`, `${NAME}`, `$$`), as with an empty .env. */
function interpolate(value: string): string {
  return value
    .replace(/\$\{([A-Z0-9_]+)(?::?-([^}]*))?\}/g, (_match, _name: string, fallback?: string) => fallback ?? '')
    .replace(/\$\$/g, '$');
}

function environmentOf(service: Service): Record<string, string> {
  return Object.fromEntries(Object.entries(service.environment ?? {}).map(([name, value]) => [name, interpolate(String(value ?? ''))]));
}

const hwrServices = ['api', 'worker', 'trainer'] as const;
/** Variables the image sets for the runtime beneath hwr (glibc, Node and V8), not for src/platform/config.ts. */
const RUNTIME_VARIABLES = new Set(['MALLOC_ARENA_MAX', 'MALLOC_MMAP_THRESHOLD_', 'MALLOC_TRIM_THRESHOLD_', 'NODE_OPTIONS']);

describe('docker-compose.yml', () => {
  test('has PostgreSQL, MinIO (with its bucket job), the API, a worker and a trainer service', () => {
    assert.deepEqual(Object.keys(compose.services).sort(), ['api', 'minio', 'minio-bucket', 'postgres', 'trainer', 'worker']);
    assert.match(compose.services.minio.image ?? '', /^minio\/minio:/);
    assert.match(compose.services.postgres.image ?? '', /^postgres:(\d+)/);
    // The event store needs pg_current_xact_id() and xid8: PostgreSQL 13 or later.
    assert.ok(Number(/^postgres:(\d+)/.exec(compose.services.postgres.image ?? '')?.[1]) >= 13);
    assert.deepEqual(compose.services.api.command, ['serve', '--role', 'api']);
    assert.deepEqual(compose.services.worker.command, ['serve', '--role', 'worker']);
    assert.deepEqual(compose.services.trainer.command, ['serve', '--role', 'trainer']);
    // The API offers training because the trainer service takes it; the trainer's image has PyTorch.
    assert.equal(loadConfig(environmentOf(compose.services.api)).training.mode, 'on');
    assert.deepEqual(compose.services.trainer.build, { context: '.', target: 'trainer' });
  });

  test('every variable the hwr services set is one src/platform/config.ts reads', () => {
    const known = configVariables();
    assert.ok(known.has('DATABASE_URL') && known.has('WORKER_CONCURRENCY'), 'the config source was read');
    for (const name of hwrServices) {
      const unknown = Object.keys(compose.services[name].environment ?? {}).filter((variable) => !known.has(variable));
      assert.deepEqual(unknown, [], `${name} sets variables the config does not read`);
    }
    const dockerfileVariables = [...dockerfile.matchAll(/^ENV\s+([A-Z0-9_]+)=/gm)].map((match) => match[1]);
    assert.deepEqual(
      dockerfileVariables.filter((variable) => !known.has(variable) && !RUNTIME_VARIABLES.has(variable)),
      [],
      'Dockerfile ENV',
    );
  });

  test('loadConfig accepts each hwr service’s environment as compose fills it in', () => {
    for (const name of hwrServices) {
      try {
        const config = loadConfig(environmentOf(compose.services[name]));
        assert.equal(config.dataDir, '/var/lib/hwr', name);
        assert.ok(config.databaseUrl, `${name} uses the PostgreSQL service, not the embedded one`);
      } catch (error) {
        if (error instanceof ConfigError) assert.fail(`${name}: ${error.message}`);
        throw error;
      }
    }
    const api = loadConfig(environmentOf(compose.services.api));
    assert.equal(api.port, 8080);
    assert.equal(api.host, '0.0.0.0');
    assert.equal(api.tls, null, 'plain HTTP unless TLS files are given');
  });

  test('the API and the workers reach the same database, whose credentials are the postgres service’s', () => {
    const postgres = environmentOf(compose.services.postgres);
    const urls = hwrServices.map((name) => new URL(environmentOf(compose.services[name]).DATABASE_URL));
    for (const url of urls) {
      assert.equal(url.hostname, 'postgres');
      assert.equal(url.username, postgres.POSTGRES_USER);
      assert.equal(url.password, postgres.POSTGRES_PASSWORD);
      assert.equal(url.pathname, `/${postgres.POSTGRES_DB}`);
    }
    for (const name of hwrServices) assert.equal(compose.services[name].depends_on?.postgres?.condition, 'service_healthy');
    assert.ok(compose.services.postgres.healthcheck);
  });

  test('the API and every worker share the stored files: one bucket on the MinIO service, no shared volume', () => {
    const minio = environmentOf(compose.services.minio);
    const bucketJob = environmentOf(compose.services['minio-bucket']);
    const stores = hwrServices.map((name) => {
      const config = loadConfig(environmentOf(compose.services[name]));
      assert.equal(config.blobs.store, 's3', name);
      assert.equal(config.results.redirect, true, `${name}: results are redirects to the bucket`);
      const s3 = config.blobs.s3!;
      assert.equal(new URL(s3.endpoint!).hostname, 'minio', name);
      assert.equal(s3.forcePathStyle, true, name);
      assert.deepEqual(s3.credentials, { accessKeyId: minio.MINIO_ROOT_USER, secretAccessKey: minio.MINIO_ROOT_PASSWORD }, name);
      assert.equal(s3.bucket, bucketJob.S3_BUCKET, `${name} uses the bucket the bucket job creates`);
      assert.equal(compose.services[name].depends_on?.['minio-bucket']?.condition, 'service_completed_successfully', name);
      // DATA_DIR holds this container's temporary files only: an anonymous volume, never a named (shared) one.
      for (const volume of compose.services[name].volumes ?? [])
        assert.ok(!volume.includes(':'), `${name} mounts no shared volume: ${volume}`);
      return JSON.stringify(s3);
    });
    assert.equal(new Set(stores).size, 1, 'the same bucket settings everywhere');
    assert.ok(
      (compose.services.minio.ports ?? []).some((port) => interpolate(port).endsWith(':9000')),
      'presigned URLs reach MinIO',
    );
    assert.ok(compose.services.minio.healthcheck);
    assert.ok(compose.volumes && 'minio-data' in compose.volumes);
  });

  test('every hwr container serves /metrics on the compose network, published on no host port', () => {
    for (const name of hwrServices) {
      assert.deepEqual(loadConfig(environmentOf(compose.services[name])).metrics, { port: 9464, host: '0.0.0.0' }, name);
      for (const port of compose.services[name].ports ?? [])
        assert.ok(!interpolate(port).endsWith(':9464'), `${name} publishes its metrics port`);
    }
  });

  test('the worker service scales: replicas, no fixed name, no host port', () => {
    const worker = compose.services.worker;
    assert.ok((worker.deploy?.replicas ?? 0) >= 1);
    // a replica per core, each one page at a time on one onnxruntime thread (ADR 0042)
    const workerConfig = loadConfig(environmentOf(worker));
    assert.equal(workerConfig.workers.pageConcurrency, 1);
    assert.equal(workerConfig.recognition.threads, 1);
    assert.equal(worker.container_name, undefined);
    assert.equal(worker.ports, undefined);
    assert.ok((compose.services.api.ports ?? []).some((port) => interpolate(port).endsWith(':8080')));
    assert.ok(compose.services.api.healthcheck?.test.join(' ').includes('/readyz'));
  });

  test('the hwr services are built from the Dockerfile: node:24-slim, npm ci, bin/hwr.js', () => {
    for (const name of hwrServices) assert.ok(compose.services[name].build, name);
    assert.match(dockerfile, /^FROM node:24-slim AS service$/m);
    // The trainer stage: the service image, Debian's Python with PyTorch, and train/; the last stage (the default) is the service.
    assert.match(dockerfile, /^FROM service AS trainer$/m);
    assert.match(dockerfile, /python3-torch python3-onnx python3-numpy python3-pil/);
    assert.match(dockerfile, /^COPY train \.\/train$/m);
    assert.match(
      dockerfile
        .trim()
        .split('\n')
        .filter((line) => line.startsWith('FROM'))
        .at(-1) ?? '',
      /^FROM service$/,
    );
    assert.match(dockerfile, /^RUN npm ci\b/m);
    assert.match(dockerfile, /^ENTRYPOINT \["node", "bin\/hwr\.js"\]$/m);
    // one malloc arena: the memory one thread frees is there for the others that recognition allocates from
    assert.match(dockerfile, /^ENV MALLOC_ARENA_MAX=1$/m);
    // large blocks kept in the heap: the models' activations are not mapped and unmapped every run
    assert.match(dockerfile, /^ENV MALLOC_MMAP_THRESHOLD_=268435456$/m);
    assert.match(dockerfile, /^ENV MALLOC_TRIM_THRESHOLD_=536870912$/m);
    // and V8's young generation bounded: less heap kept between pages (docs/deployment.md, "Memory")
    assert.match(dockerfile, /^ENV NODE_OPTIONS=--max-semi-space-size=4$/m);
    // Everything the service loads at run time is copied into the image.
    for (const folder of ['bin', 'src', 'domain', 'projections', 'migrations', 'assets']) {
      assert.match(dockerfile, new RegExp(`^COPY ${folder} \\./${folder}$`, 'm'), folder);
    }
    // The default model setup and every model directory it borrows, followed through the manifests.
    const copied = new Set([...dockerfile.matchAll(/^COPY (models\/[\w-]+) \.\/\1$/gm)].map((match) => match[1]));
    const needed = ['models/default'];
    for (let i = 0; i < needed.length; i++) {
      const manifest = JSON.parse(readFileSync(path.join(root, needed[i], 'manifest.json'), 'utf8')) as Record<string, unknown>;
      for (const borrowed of JSON.stringify(manifest).matchAll(/"model":"\.\.\/([\w-]+)"/g)) {
        const folder = `models/${borrowed[1]}`;
        if (!needed.includes(folder)) needed.push(folder);
      }
    }
    assert.deepEqual([...copied].sort(), needed.sort());
  });
});
