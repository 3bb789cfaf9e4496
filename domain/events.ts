// The event catalog: every fact the system records, with its typed data.
// Each type carries a schema version; a new incompatible shape gets a new version
// and an upcaster in `upcast`, so old histories keep replaying.

// What a job is asked to do and the pages it reads, as JobQueued carries them.
// The option lists are shared with the client (src/shared/job-options.ts).
import type { LlmTier, PdfFormat, PipelineStep } from '../src/shared/job-options.ts';

export { LLM_TIERS, PDF_FORMATS, PIPELINE_STEPS } from '../src/shared/job-options.ts';
export type { LlmTier, PdfFormat, PipelineStep } from '../src/shared/job-options.ts';

export const PAGE_STEPS = ['layout', 'recognition', 'correction'] as const;
export type PageStep = (typeof PAGE_STEPS)[number];

export interface JobOptions {
  llmTier: LlmTier;
  /** Document type for correction (the correction presets, docs/correction.md). */
  preset: string;
  /** Steps to run, always a prefix of PIPELINE_STEPS ending with 'export'. */
  pipelineSteps: PipelineStep[];
  pdfFormat: PdfFormat;
  webhookUrl: string | null;
}

export interface PageSource {
  /** 1-based page number (natural sort order of ZIP entry paths). */
  pageNumber: number;
  /** Entry path inside the submitted ZIP. */
  name: string;
  /** Where intake stored the page image. */
  blobKey: string;
  sha256: string;
  bytes: number;
  /**
   * Where intake stored the page's own layout (a PageXML or ALTO file of the same stem in the
   * ZIP), checked against the image; absent (all events before it): the layout is detected.
   */
  layoutBlobKey?: string;
}

export const EVENT_SCHEMA_VERSIONS = {
  JobQueued: 1,
  JobStarted: 1,
  StepStarted: 1,
  PageCompleted: 1,
  JobSucceeded: 1,
  JobFailed: 1,
  JobCancelled: 1,
  CallbackAttempted: 1,
  CallbackAbandoned: 1,
  ResultExpired: 1,
  AccountCreated: 1,
  ApiKeyCreated: 1,
  ApiKeyRevoked: 1,
  WebhookSecretRotated: 1,
  UserInvited: 1,
  UserCreated: 1,
  PasswordChanged: 1,
  UserSignedIn: 1,
  UserSignInFailed: 1,
} as const;

export type EventType = keyof typeof EVENT_SCHEMA_VERSIONS;

export interface CorrectionUsage {
  provider: string;
  model: string;
  inputTokens: number;
  outputTokens: number;
  refusedLines: number;
  /**
   * 'applied': the answer passed the guards (billing bills the tier for this page); 'rejected',
   * 'unavailable': the recognised text was kept. Absent in events recorded before it was copied
   * here (billing then counts the page as corrected, as it did when they were recorded).
   */
  outcome?: 'applied' | 'rejected' | 'unavailable';
}

export interface JobEventData {
  JobQueued: {
    jobId: string;
    accountId: string;
    /** The API key that submitted it (id, never the key). */
    keyId: string | null;
    pageCount: number;
    pages: PageSource[];
    options: JobOptions;
    uploadKey: string;
    createdAt: string;
    expiresAt: string;
    idempotency: { key: string; requestHash: string } | null;
  };
  JobStarted: { startedAt: string };
  /** `page` is null for the job-level export step. */
  StepStarted: { page: number | null; step: PipelineStep };
  PageCompleted: {
    page: number;
    resultKey: string;
    lineCount: number;
    warnings: string[];
    correction: CorrectionUsage | null;
  };
  JobSucceeded: {
    finishedAt: string;
    archiveKey: string;
    archiveBytes: number;
    archiveSha256: string;
    warningMessage: string | null;
  };
  JobFailed: { finishedAt: string; errorMessage: string; page: number | null };
  JobCancelled: { cancelledAt: string; previousState: 'queued' | 'processing' };
  CallbackAttempted: {
    /** Same on every retry of one delivery (sent as `event_id`). */
    deliveryId: string;
    event: 'job.completed' | 'job.failed';
    attempt: number;
    url: string;
    ok: boolean;
    httpStatus: number | null;
    error: string | null;
    durationMs: number;
    /** When the next attempt is due, null when delivery ended with this attempt. */
    nextAttemptAt: string | null;
  };
  CallbackAbandoned: { deliveryId: string; attempts: number };
  ResultExpired: { expiredAt: string };
}

export interface AccountEventData {
  AccountCreated: { accountId: string; name: string; createdAt: string; webhookSecretSha256: string };
  /** Only the SHA-256 of the key is ever recorded. */
  ApiKeyCreated: { keyId: string; label: string; prefix: string; keyHash: string; createdAt: string };
  ApiKeyRevoked: { keyId: string; revokedAt: string };
  /** The secret itself lives outside the event log (account_secrets); the log keeps its fingerprint. */
  WebhookSecretRotated: { webhookSecretSha256: string; rotatedAt: string };
  /**
   * Portal users (docs/portal.md). A setup link was issued: only the SHA-256 of its token is
   * recorded; it works once, until `expiresAt`, and ends the user's older unused links. An invite
   * of an existing user is a password reset.
   */
  UserInvited: { userId: string; email: string; inviteId: string; tokenSha256: string; invitedAt: string; expiresAt: string };
  /** The invited user set a password through the setup link (the hash lives outside the log). */
  UserCreated: { userId: string; email: string; inviteId: string; createdAt: string };
  /** A password was set again: through a later setup link (`inviteId`) or by the signed-in user. */
  PasswordChanged: { userId: string; inviteId: string | null; changedAt: string };
  /** `sessionRef`: the first 12 hex digits of the SHA-256 of the session id, never the id. */
  UserSignedIn: { userId: string; address: string; sessionRef: string; signedInAt: string };
  UserSignInFailed: { userId: string; address: string; reason: 'wrong_password' | 'no_password'; failedAt: string };
}

export type EventData = JobEventData & AccountEventData;

export type DomainEvent<T extends EventType = EventType> = {
  [K in T]: { type: K; data: EventData[K] };
}[T];

export type JobEvent = DomainEvent<keyof JobEventData>;
export type AccountEvent = DomainEvent<keyof AccountEventData>;

export interface EventMetadata {
  /** Who caused it: an API key id, 'cli', 'worker', 'system'. */
  actor?: string;
  accountId?: string;
  requestId?: string;
  /** The task or event that caused this one. */
  causationId?: string;
  schemaVersion?: number;
}

/** An event as stored. */
export interface RecordedEvent<T extends EventType = EventType> {
  globalPosition: string;
  streamId: string;
  streamVersion: number;
  type: T;
  data: EventData[T];
  metadata: EventMetadata;
  transactionId: string;
  recordedAt: Date;
}

export function isEventType(type: string): type is EventType {
  return Object.hasOwn(EVENT_SCHEMA_VERSIONS, type);
}

/** Brings a stored event of any schema version to the current shape. All types are at v1 so far. */
export function upcast(type: string, data: unknown, _schemaVersion: number): DomainEvent {
  if (!isEventType(type)) throw new Error(`unknown event type ${type}`);
  return { type, data } as DomainEvent;
}

export const jobStreamId = (jobId: string): string => `job-${jobId}`;
export const accountStreamId = (accountId: string): string => `account-${accountId}`;
