// All configuration comes from environment variables, read and validated here only.
// `loadConfig()` throws a ConfigError listing every invalid variable at once.
import os from 'node:os';
import path from 'node:path';
import { defaultPixelBudget } from '../recognition/engine/pixel-budget.ts';
import {
  CORRECTION_ANSWER_ROUNDS,
  CORRECTION_PROVIDERS,
  type CorrectionProviderName,
  type CorrectionSettings,
  EVIDENCE_GUARD,
  evidenceGuard,
  type LineGuardSettings,
  type SupportedPageBounds,
} from '../recognition/correction/settings.ts';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface Config {
  /** null: use the embedded PostgreSQL under DATA_DIR/postgres. */
  databaseUrl: string | null;
  database: {
    /** Connecting (and waiting for a pooled connection) fails after this long, instead of hanging. */
    connectTimeoutMs: number;
    /** PostgreSQL's statement_timeout for every session (0: none); long operations set their own. */
    statementTimeoutMs: number;
    /** The client gives up on a query with no answer after this long (0: none); above the statement timeout. */
    queryTimeoutMs: number;
    /** PostgreSQL ends a session idle inside a transaction this long, releasing its locks (0: never). */
    idleInTransactionTimeoutMs: number;
  };
  dataDir: string;
  port: number;
  host: string;
  /** Public base address used to build status_url/result_url. */
  baseUrl: string;
  logLevel: LogLevel;
  tls: { certFile: string; keyFile: string } | null;
  /** Embedded PostgreSQL port (only when databaseUrl is null). */
  embeddedPostgresPort: number;
  /** As root: where the embedded cluster and binaries go when the user postgres cannot reach DATA_DIR or node_modules. */
  embeddedPostgresRootDir: string;
  http: {
    /** Take the client address and protocol from X-Forwarded-* (only behind a proxy that sets them). */
    trustProxy: boolean;
    /** A request body slower than this over `bodyRateWindowSeconds` is cut with 408 (0: off). */
    minBodyBytesPerSecond: number;
    bodyRateWindowSeconds: number;
    /** Open connections one peer address may hold (0: no cap). */
    maxConnectionsPerAddress: number;
  };
  workers: {
    /** Page tasks one worker process runs at once. */
    pageConcurrency: number;
    /** Export tasks one worker process runs at once. */
    exportConcurrency: number;
    /** Attempts of a page task before the job fails. */
    pageRetryLimit: number;
    /** Seconds a task may run before pg-boss considers it dead and retries it. */
    taskExpireSeconds: number;
    /** Fallback poll interval; LISTEN/NOTIFY wakes workers at once. */
    pollingIntervalSeconds: number;
    /** A running task refreshes its claim this often x2; a killed worker's task is retried after it lapses. */
    heartbeatSeconds: number;
    /** How often pg-boss looks for lapsed tasks and runs cron schedules. */
    superviseIntervalSeconds: number;
    /** On SIGTERM, how long running tasks may finish before they are handed back unspent. */
    shutdownGraceSeconds: number;
  };
  limits: {
    maxUploadBytes: number;
    maxPages: number;
    maxUncompressedBytes: number;
    maxCompressionRatio: number;
    maxImagePixels: number;
    /** Pixels of pages being processed at once in one process (memory admission). */
    maxPixelsInFlight: number;
    /** Uploads are refused (503) while DATA_DIR's file system has less free space than this. */
    minFreeDiskBytes: number;
    /** Requests per API key: a token bucket per key and process (RATE_LIMIT_PER_SECOND, 0: off; RATE_LIMIT_BURST). */
    rateLimit: { perSecond: number; burst: number };
    /** Jobs not yet done, failed or cancelled one account may have; a submission past it gets 429 (0: no limit). */
    maxActiveJobsPerAccount: number;
    /** Pages of those jobs not yet processed, this submission's included; past it, 429 (0: no limit). */
    maxQueuedPagesPerAccount: number;
  };
  results: {
    /** How long results stay downloadable after created_at. */
    retentionSeconds: number;
    /** The result download answers 302 to a presigned URL of the object store (RESULT_REDIRECT; on by default with S3). */
    redirect: boolean;
    /** How long such a URL is valid (RESULT_URL_TTL_SECONDS). */
    urlTtlSeconds: number;
  };
  metrics: {
    /** GET /metrics listens here (METRICS_PORT, METRICS_HOST); port 0: off. */
    port: number;
    host: string;
  };
  blobs: {
    /** BLOB_STORE: `filesystem` (DATA_DIR/blobs, one machine) or `s3` (any S3-compatible bucket). */
    store: 'filesystem' | 's3';
    /** Set when store is `s3`. */
    s3: S3Settings | null;
  };
  callbacks: {
    /** Multiplies the 1, 5, 25, 125, 625 s retry delays (tests use e.g. 0.01). */
    retryScale: number;
    timeoutMs: number;
    allowHttp: boolean;
    allowPrivate: boolean;
  };
  recognition: {
    /** Directory of a custom model (manifest.json); null: the built-in default. */
    modelDir: string | null;
    /** onnxruntime intra-op threads per model run (ORT_THREADS), at most the number of cores. */
    threads: number;
    /**
     * Model runs handed to the inference worker at once in one process, across all its pages
     * (RECOGNITION_CONCURRENCY); threads x concurrency never exceeds the cores. Default: cores /
     * threads. The one worker runs them one at a time (docs/recognition.md, "Threads and concurrency").
     */
    concurrency: number;
    /**
     * CTC decoding (RECOGNITION_DECODER): `beam` search with the character language model of
     * models whose manifest names one, or `greedy` (models without a language model always decode greedily).
     */
    decoder: 'greedy' | 'beam';
    /**
     * TRAINED_MODELS_MEMORY_MB: the most memory a worker gives the account models its jobs read
     * with (each loaded once, least recently used unloaded first; docs/models.md). Default 512.
     */
    trainedModelsMemoryMb: number;
  };
  /** The correction step's settings (the library's; read below). */
  correction: CorrectionSettings;
  /** Training models on an account's ground truth (docs/models.md, "Where training runs"). */
  training: {
    /**
     * TRAINER: `auto` (the default: training is offered where a Python with PyTorch, ONNX, NumPy
     * and Pillow is found), `on` (offered without looking: a trainer runs on another machine), `off`.
     */
    mode: 'auto' | 'on' | 'off';
    /** TRAINER_PYTHON: the Python to look for and run the trainer with; null: `python3` on the PATH, then /usr/bin/python3. */
    python: string | null;
    /** TRAINING_MAX_MINUTES: a training's time budget (all attempts together); the best checkpoint by then is the model. Default 30. */
    maxMinutes: number;
    /** TRAINER_CONCURRENCY: trainings one trainer process runs at once. Default 1. */
    concurrency: number;
    /** TRAINER_THREADS: PyTorch threads of one training. Default: the cores. */
    threads: number;
    /** TRAINER_NICE: the trainer's CPU priority below page work (a nice value, 0..19). Default 10. */
    niceness: number;
    /**
     * TRAINING_QUANTIZE: a trained model also gets its convolutions in 8 bits and runs them where they read the
     * hand's lines alike (finetune.py --quantize; docs/models.md, "A trained model in 8 bits"). Default off.
     */
    quantize: boolean;
  };
}

export interface S3Settings {
  bucket: string;
  prefix: string;
  endpoint: string | null;
  publicEndpoint: string | null;
  region: string;
  forcePathStyle: boolean;
  /** From AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN; null: the AWS SDK's default chain. */
  credentials: { accessKeyId: string; secretAccessKey: string; sessionToken?: string } | null;
}

export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

type Env = Record<string, string | undefined>;

/** DATABASE_QUERY_TIMEOUT_MS's default is the statement timeout plus this: the server's cancel answers first. */
const QUERY_TIMEOUT_MARGIN_MS = 10_000;

export function loadConfig(env: Env = process.env): Config {
  const problems: string[] = [];
  const read = new EnvReader(env, problems);
  const cores = Math.max(1, os.availableParallelism());

  const port = read.integer('PORT', 8080, 0, 65535);
  const blobs = readBlobs(read, problems);
  const tlsCert = read.string('TLS_CERT_FILE');
  const tlsKey = read.string('TLS_KEY_FILE');
  if ((tlsCert === null) !== (tlsKey === null)) problems.push('TLS_CERT_FILE and TLS_KEY_FILE must be set together');
  const tls = tlsCert && tlsKey ? { certFile: tlsCert, keyFile: tlsKey } : null;
  const host = read.string('HOST') ?? '0.0.0.0';
  const baseUrl = read.url('BASE_URL') ?? `${tls ? 'https' : 'http'}://localhost:${port}`;

  const statementTimeoutMs = read.integer('DATABASE_STATEMENT_TIMEOUT_MS', 60_000, 0, 24 * 3600 * 1000);
  const config: Config = {
    databaseUrl: read.postgresUrl('DATABASE_URL'),
    database: {
      connectTimeoutMs: read.integer('DATABASE_CONNECT_TIMEOUT_MS', 10_000, 100, 600_000),
      statementTimeoutMs,
      queryTimeoutMs: read.integer(
        'DATABASE_QUERY_TIMEOUT_MS',
        statementTimeoutMs === 0 ? 0 : statementTimeoutMs + QUERY_TIMEOUT_MARGIN_MS,
        0,
        24 * 3600 * 1000 + QUERY_TIMEOUT_MARGIN_MS,
      ),
      idleInTransactionTimeoutMs: read.integer('DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS', 60_000, 0, 24 * 3600 * 1000),
    },
    dataDir: path.resolve(read.string('DATA_DIR') ?? './.data'),
    port,
    host,
    baseUrl: baseUrl.replace(/\/+$/, ''),
    logLevel: read.oneOf('LOG_LEVEL', LOG_LEVELS, 'info'),
    tls,
    embeddedPostgresPort: read.integer('EMBEDDED_POSTGRES_PORT', 54329, 1, 65535),
    embeddedPostgresRootDir: path.resolve(read.string('EMBEDDED_POSTGRES_ROOT_DIR') ?? '/var/lib/hwr'),
    http: {
      trustProxy: read.flag('TRUST_PROXY'),
      minBodyBytesPerSecond: read.integer('MIN_BODY_BYTES_PER_SECOND', 1024, 0, 1024 * 1024 * 1024),
      bodyRateWindowSeconds: read.integer('BODY_RATE_WINDOW_SECONDS', 60, 1, 3600),
      maxConnectionsPerAddress: read.integer('MAX_CONNECTIONS_PER_ADDRESS', 64, 0, 1_000_000),
    },
    workers: {
      pageConcurrency: read.integer('WORKER_CONCURRENCY', cores, 1, 256),
      exportConcurrency: read.integer('EXPORT_CONCURRENCY', 1, 1, 64),
      pageRetryLimit: read.integer('PAGE_RETRY_LIMIT', 2, 0, 20),
      taskExpireSeconds: read.integer('TASK_EXPIRE_SECONDS', 900, 10, 86400),
      pollingIntervalSeconds: read.number('WORKER_POLL_SECONDS', 2, 0.5, 60),
      heartbeatSeconds: read.integer('TASK_HEARTBEAT_SECONDS', 30, 10, 3600),
      superviseIntervalSeconds: read.integer('SUPERVISE_INTERVAL_SECONDS', 30, 1, 3600),
      // Fits a 30 s orchestrator stop window (Kubernetes, docker compose's default is 10 s: set
      // stop_grace_period) with room to hand tasks back and close.
      shutdownGraceSeconds: read.number('SHUTDOWN_GRACE_SECONDS', 25, 0, 3600),
    },
    limits: {
      maxUploadBytes: read.integer('MAX_UPLOAD_BYTES', 512 * 1024 * 1024, 1, Number.MAX_SAFE_INTEGER),
      maxPages: read.integer('MAX_PAGES', 1000, 1, 100000),
      maxUncompressedBytes: read.integer('MAX_UNCOMPRESSED_BYTES', 2 * 1024 * 1024 * 1024, 1, Number.MAX_SAFE_INTEGER),
      maxCompressionRatio: read.number('MAX_COMPRESSION_RATIO', 100, 1, 1e6),
      maxImagePixels: read.integer('MAX_IMAGE_PIXELS', 100_000_000, 1, Number.MAX_SAFE_INTEGER),
      maxPixelsInFlight: read.integer('MAX_PIXELS_IN_FLIGHT', defaultPixelBudget(availableMemory()), 1, Number.MAX_SAFE_INTEGER),
      minFreeDiskBytes: read.integer('MIN_FREE_DISK_BYTES', 1024 * 1024 * 1024, 0, Number.MAX_SAFE_INTEGER),
      rateLimit: {
        perSecond: read.number('RATE_LIMIT_PER_SECOND', 50, 0, 1_000_000),
        burst: read.integer('RATE_LIMIT_BURST', 200, 1, 1_000_000),
      },
      maxActiveJobsPerAccount: read.integer('MAX_ACTIVE_JOBS_PER_ACCOUNT', 100, 0, 1_000_000),
      maxQueuedPagesPerAccount: read.integer('MAX_QUEUED_PAGES_PER_ACCOUNT', 10_000, 0, 100_000_000),
    },
    results: {
      retentionSeconds: read.integer('RESULT_RETENTION_SECONDS', 7 * 24 * 3600, 1, 10 * 365 * 24 * 3600),
      redirect: read.string('RESULT_REDIRECT') === null ? blobs.store === 's3' : read.flag('RESULT_REDIRECT'),
      urlTtlSeconds: read.integer('RESULT_URL_TTL_SECONDS', 300, 1, 7 * 24 * 3600),
    },
    blobs,
    metrics: {
      port: read.integer('METRICS_PORT', 9464, 0, 65535),
      host: read.string('METRICS_HOST') ?? '127.0.0.1',
    },
    callbacks: {
      retryScale: read.number('CALLBACK_RETRY_SCALE', 1, 0, 1000),
      timeoutMs: read.integer('CALLBACK_TIMEOUT_MS', 10_000, 1, 600_000),
      allowHttp: read.flag('WEBHOOK_ALLOW_HTTP'),
      allowPrivate: read.flag('WEBHOOK_ALLOW_PRIVATE'),
    },
    recognition: recognitionConfig(read, cores),
    correction: readCorrection(read, problems),
    training: {
      mode: read.oneOf('TRAINER', ['auto', 'on', 'off'] as const, 'auto'),
      python: read.string('TRAINER_PYTHON'),
      maxMinutes: read.number('TRAINING_MAX_MINUTES', 30, 0.1, 180),
      concurrency: read.integer('TRAINER_CONCURRENCY', 1, 1, 8),
      threads: Math.min(cores, read.integer('TRAINER_THREADS', cores, 1, 256)),
      niceness: read.integer('TRAINER_NICE', 10, 0, 19),
      quantize: read.flag('TRAINING_QUANTIZE'),
    },
  };
  const correctionMs = correctionWorstCaseMs(config.correction);
  if (config.correction.provider !== null && correctionMs > config.workers.taskExpireSeconds * 1000) {
    problems.push(
      `correction's worst case on one page (${CORRECTION_ANSWER_ROUNDS} answers x (CORRECTION_RETRIES + 1) x CORRECTION_TIMEOUT_MS ` +
        `plus CORRECTION_RETRIES x CORRECTION_MAX_RETRY_WAIT_MS each = ${Math.ceil(correctionMs / 1000)} s) is longer than ` +
        `TASK_EXPIRE_SECONDS (${config.workers.taskExpireSeconds} s): the page task would expire mid-correction; lower the first or raise the second`,
    );
  }
  const { queryTimeoutMs } = config.database;
  if (queryTimeoutMs > 0 && statementTimeoutMs > 0 && queryTimeoutMs <= statementTimeoutMs) {
    problems.push(
      `DATABASE_QUERY_TIMEOUT_MS (${queryTimeoutMs}) must be longer than DATABASE_STATEMENT_TIMEOUT_MS (${statementTimeoutMs}), or 0 (none): ` +
        "the client would give up on statements before PostgreSQL's own timeout cancels them",
    );
  }
  const { maxQueuedPagesPerAccount, maxPages } = config.limits;
  if (maxQueuedPagesPerAccount > 0 && maxQueuedPagesPerAccount < maxPages) {
    problems.push(
      `MAX_QUEUED_PAGES_PER_ACCOUNT (${maxQueuedPagesPerAccount}) must be at least MAX_PAGES (${maxPages}), or 0 (no limit): ` +
        'a job of MAX_PAGES pages could never be accepted',
    );
  }
  if (config.results.redirect && config.blobs.store !== 's3') {
    problems.push('RESULT_REDIRECT=1 needs BLOB_STORE=s3: the filesystem store has no URLs to redirect to');
  }
  if (config.callbacks.timeoutMs > CALLBACK_TIMEOUT_MAX_MS) {
    problems.push(
      `CALLBACK_TIMEOUT_MS must be at most ${CALLBACK_TIMEOUT_MAX_MS} (half the callback task's ${CALLBACK_TASK_EXPIRE_SECONDS} s expiry, ` +
        `so that an attempt never outlives its task and a second delivery never starts beside it), got ${config.callbacks.timeoutMs}`,
    );
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}

/** The longest one page's correction can take: every call timing out, every wait at its cap. */
export function correctionWorstCaseMs(correction: Pick<Config['correction'], 'timeoutMs' | 'retries' | 'maxRetryWaitMs'>): number {
  return CORRECTION_ANSWER_ROUNDS * ((correction.retries + 1) * correction.timeoutMs + correction.retries * correction.maxRetryWaitMs);
}

/** A callback task's expiry (pg-boss expireInSeconds of the callback queue). */
export const CALLBACK_TASK_EXPIRE_SECONDS = 120;
export const CALLBACK_TIMEOUT_MAX_MS = (CALLBACK_TASK_EXPIRE_SECONDS * 1000) / 2;

function readCorrection(read: EnvReader, problems: string[]): Config['correction'] {
  const geminiApiKey = read.string('GEMINI_API_KEY');
  const openaiBaseUrl = read.url('OPENAI_BASE_URL');
  const openaiDefaultModel = read.string('OPENAI_MODEL');
  const openaiModels = {
    cheap: read.string('OPENAI_MODEL_CHEAP') ?? openaiDefaultModel,
    balanced: read.string('OPENAI_MODEL_BALANCED') ?? openaiDefaultModel,
    best: read.string('OPENAI_MODEL_BEST') ?? openaiDefaultModel,
  };
  if (openaiBaseUrl !== null) {
    const missing = Object.entries(openaiModels)
      .filter(([, model]) => model === null)
      .map(([tier]) => `OPENAI_MODEL_${tier.toUpperCase()}`);
    if (missing.length > 0) problems.push(`OPENAI_BASE_URL needs OPENAI_MODEL, or else ${missing.join(', ')}`);
  }
  const choice = read.oneOf('CORRECTION_PROVIDER', ['auto', 'none', ...CORRECTION_PROVIDERS], 'auto');
  let provider: CorrectionProviderName | null = null;
  if (choice === 'gemini' || choice === 'openai') {
    provider = choice;
    if (choice === 'gemini' && geminiApiKey === null) problems.push('CORRECTION_PROVIDER=gemini needs GEMINI_API_KEY');
    if (choice === 'openai' && openaiBaseUrl === null) problems.push('CORRECTION_PROVIDER=openai needs OPENAI_BASE_URL');
  } else if (choice === 'auto') {
    if (geminiApiKey !== null && openaiBaseUrl !== null) {
      problems.push('both GEMINI_API_KEY and OPENAI_BASE_URL are set: choose one with CORRECTION_PROVIDER=gemini|openai|none');
    }
    provider = geminiApiKey !== null ? 'gemini' : openaiBaseUrl !== null ? 'openai' : null;
  }
  return {
    provider,
    geminiApiKey,
    geminiBaseUrl: read.url('GEMINI_BASE_URL'),
    openaiBaseUrl,
    openaiApiKey: read.string('OPENAI_API_KEY'),
    models: {
      gemini: {
        cheap: read.string('GEMINI_MODEL_CHEAP') ?? 'gemini-2.5-flash-lite',
        balanced: read.string('GEMINI_MODEL_BALANCED') ?? 'gemini-2.5-flash',
        best: read.string('GEMINI_MODEL_BEST') ?? 'gemini-2.5-pro',
      },
      openai: openaiModels,
    },
    bestTierImage: {
      gemini: read.string('GEMINI_BEST_TIER_IMAGE') === null ? true : read.flag('GEMINI_BEST_TIER_IMAGE'),
      openai: read.flag('OPENAI_BEST_TIER_IMAGE'),
    },
    maxEditRatio: read.number('CORRECTION_MAX_EDIT_RATIO', 0.3, 0, 1),
    lineGuard: lineGuardConfig(read),
    timeoutMs: read.integer('CORRECTION_TIMEOUT_MS', 60_000, 1, 3_600_000),
    retries: read.integer('CORRECTION_RETRIES', 3, 0, 10),
    retryBaseMs: read.integer('CORRECTION_RETRY_BASE_MS', 1_000, 0, 600_000),
    maxRetryWaitMs: read.integer('CORRECTION_MAX_RETRY_WAIT_MS', 60_000, 0, 3_600_000),
  };
}

/** CORRECTION_LINE_GUARD and the evidence guard's thresholds (docs/correction.md, "Guards"). */
function lineGuardConfig(read: EnvReader): LineGuardSettings {
  if (read.oneOf('CORRECTION_LINE_GUARD', ['evidence', 'edit-ratio'] as const, 'evidence') === 'edit-ratio') return { kind: 'edit-ratio' };
  const base = {
    maxLossPerChar: read.number('CORRECTION_MAX_LOSS_PER_CHAR', EVIDENCE_GUARD.maxLossPerChar, 0, 100),
    confidenceSlack: read.number('CORRECTION_LOSS_CONFIDENCE_SLACK', EVIDENCE_GUARD.confidenceSlack, 0, 100),
    maxLossPerEdit: read.number('CORRECTION_MAX_LOSS_PER_EDIT', EVIDENCE_GUARD.maxLossPerEdit, 0, 1000),
    framelessMaxEditRatio: read.number('CORRECTION_FRAMELESS_MAX_EDIT_RATIO', EVIDENCE_GUARD.framelessMaxEditRatio, 0, 1),
    maxDroppedRun: read.number('CORRECTION_MAX_DROPPED_RUN', EVIDENCE_GUARD.maxDroppedRun, 0, 10_000),
    maxDroppedInk: read.number('CORRECTION_MAX_DROPPED_INK', EVIDENCE_GUARD.maxDroppedInk, 0, 1e6),
    supportedPage: supportedPageConfig(read),
  };
  const bestMaxLoss = read.number('CORRECTION_MAX_LOSS_PER_CHAR_BEST_IMAGE', base.maxLossPerChar, 0, 100);
  return evidenceGuard(base, { ...base, maxLossPerChar: bestMaxLoss });
}

/** The evidence guard's looser bounds on a page the image supports; a share of 1 turns them off (no line over the bounds is then left). */
function supportedPageConfig(read: EnvReader): SupportedPageBounds | null {
  const defaults = EVIDENCE_GUARD.supportedPage;
  const minShare = read.number('CORRECTION_SUPPORTED_PAGE_SHARE', defaults?.minShare ?? 1, 0, 1);
  if (minShare >= 1) return null;
  return {
    minShare,
    maxLossPerChar: read.number(
      'CORRECTION_SUPPORTED_MAX_LOSS_PER_CHAR',
      defaults?.maxLossPerChar ?? EVIDENCE_GUARD.maxLossPerChar,
      0,
      100,
    ),
    confidenceSlack: read.number(
      'CORRECTION_SUPPORTED_LOSS_CONFIDENCE_SLACK',
      defaults?.confidenceSlack ?? EVIDENCE_GUARD.confidenceSlack,
      0,
      100,
    ),
    maxLossPerEdit: read.number(
      'CORRECTION_SUPPORTED_MAX_LOSS_PER_EDIT',
      defaults?.maxLossPerEdit ?? EVIDENCE_GUARD.maxLossPerEdit,
      0,
      1000,
    ),
    maxDroppedInk: read.number('CORRECTION_SUPPORTED_MAX_DROPPED_INK', defaults?.maxDroppedInk ?? EVIDENCE_GUARD.maxDroppedInk, 0, 1e6),
  };
}

function recognitionConfig(read: EnvReader, cores: number): Config['recognition'] {
  const threads = Math.min(cores, read.integer('ORT_THREADS', cores, 1, 256));
  const fitting = Math.max(1, Math.floor(cores / threads));
  const concurrency = Math.min(fitting, read.integer('RECOGNITION_CONCURRENCY', fitting, 1, 256));
  return {
    modelDir: read.string('MODEL_DIR'),
    threads,
    concurrency,
    decoder: read.oneOf('RECOGNITION_DECODER', ['greedy', 'beam'] as const, 'beam'),
    trainedModelsMemoryMb: read.integer('TRAINED_MODELS_MEMORY_MB', 512, 64, 65536),
  };
}

function readBlobs(read: EnvReader, problems: string[]): Config['blobs'] {
  const store = read.oneOf('BLOB_STORE', ['filesystem', 's3'] as const, 'filesystem');
  // Read whatever the store, so that every S3 variable is known (and checked) in both cases.
  const bucket = read.string('S3_BUCKET');
  const prefix = read.string('S3_PREFIX') ?? '';
  const endpoint = read.url('S3_ENDPOINT');
  const publicEndpoint = read.url('S3_PUBLIC_ENDPOINT');
  const region = read.string('S3_REGION') ?? read.string('AWS_REGION') ?? read.string('AWS_DEFAULT_REGION') ?? 'us-east-1';
  const forcePathStyle = read.flag('S3_FORCE_PATH_STYLE');
  const accessKeyId = read.string('AWS_ACCESS_KEY_ID');
  const secretAccessKey = read.string('AWS_SECRET_ACCESS_KEY');
  const sessionToken = read.string('AWS_SESSION_TOKEN');
  if (store !== 's3') return { store, s3: null };
  if (!bucket) problems.push('BLOB_STORE=s3 needs S3_BUCKET');
  if (prefix.split('/').some((part) => part === '.' || part === '..'))
    problems.push(`S3_PREFIX must not contain . or .. segments, got ${JSON.stringify(prefix)}`);
  if ((accessKeyId === null) !== (secretAccessKey === null))
    problems.push('AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY go together (or neither: the AWS default credential chain)');
  const credentials = accessKeyId && secretAccessKey ? { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) } : null;
  return { store, s3: { bucket: bucket ?? '', prefix, endpoint, publicEndpoint, region, forcePathStyle, credentials } };
}

class EnvReader {
  private readonly env: Env;
  private readonly problems: string[];

  constructor(env: Env, problems: string[]) {
    this.env = env;
    this.problems = problems;
  }

  string(name: string): string | null {
    const value = this.env[name]?.trim();
    return value ? value : null;
  }

  integer(name: string, fallback: number, min: number, max: number): number {
    const raw = this.string(name);
    if (raw === null) return fallback;
    const value = Number(raw);
    if (!/^-?\d+$/.test(raw) || !Number.isSafeInteger(value) || value < min || value > max) {
      this.problems.push(`${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`);
      return fallback;
    }
    return value;
  }

  number(name: string, fallback: number, min: number, max: number): number {
    const raw = this.string(name);
    if (raw === null) return fallback;
    const value = Number(raw);
    if (!Number.isFinite(value) || value < min || value > max) {
      this.problems.push(`${name} must be a number from ${min} to ${max}, got ${JSON.stringify(raw)}`);
      return fallback;
    }
    return value;
  }

  flag(name: string): boolean {
    const raw = this.string(name);
    if (raw === null) return false;
    if (['1', 'true', 'yes', 'on'].includes(raw.toLowerCase())) return true;
    if (['0', 'false', 'no', 'off'].includes(raw.toLowerCase())) return false;
    this.problems.push(`${name} must be 1 or 0, got ${JSON.stringify(raw)}`);
    return false;
  }

  oneOf<T extends string>(name: string, allowed: readonly T[], fallback: T): T {
    const raw = this.string(name);
    if (raw === null) return fallback;
    if ((allowed as readonly string[]).includes(raw)) return raw as T;
    this.problems.push(`${name} must be one of ${allowed.join(', ')}, got ${JSON.stringify(raw)}`);
    return fallback;
  }

  url(name: string): string | null {
    const raw = this.string(name);
    if (raw === null) return null;
    try {
      const url = new URL(raw);
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('protocol');
      return raw;
    } catch {
      this.problems.push(`${name} must be an http(s) URL, got ${JSON.stringify(raw)}`);
      return null;
    }
  }

  postgresUrl(name: string): string | null {
    const raw = this.string(name);
    if (raw === null) return null;
    try {
      const url = new URL(raw);
      if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') throw new Error('protocol');
      return raw;
    } catch {
      this.problems.push(`${name} must be a postgres:// URL`);
      return null;
    }
  }
}

/** The memory this process may use: its cgroup's limit where one is set, else the machine's. */
function availableMemory(): number {
  const constrained = process.constrainedMemory();
  return constrained > 0 && constrained < os.totalmem() ? constrained : os.totalmem();
}
