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
  /**
   * The account's trained model the pages are read with (a model id, docs/models.md); absent: the
   * default model (every job submitted without one, and all events recorded before it existed).
   */
  model?: string;
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
  PageTextCorrected: 1,
  ResultReexported: 1,
  AccountCreated: 1,
  ApiKeyCreated: 1,
  ApiKeyRevoked: 1,
  WebhookSecretRotated: 1,
  UserInvited: 1,
  UserCreated: 1,
  PasswordChanged: 1,
  UserSignedIn: 1,
  UserSignInFailed: 1,
  AccountDefaultModelChosen: 1,
  ModelTrainingQueued: 1,
  ModelTrainingStarted: 1,
  ModelTrainingProgressed: 1,
  ModelTrained: 1,
  ModelTrainingFailed: 1,
  ModelTrainingCancelled: 1,
  ModelRetired: 1,
} as const;

export type EventType = keyof typeof EVENT_SCHEMA_VERSIONS;

/** A line whose correction a guard refused: the page result's line id and why. */
export interface RefusedLine {
  id: string;
  reason: string;
}

export interface CorrectionUsage {
  provider: string;
  model: string;
  inputTokens: number;
  outputTokens: number;
  /** How many changed lines a line guard refused (their recognised text kept). */
  refusedLines: number;
  /**
   * Those lines with the guard's reason each (docs/correction.md, "Guards"). Absent in events
   * recorded before it was copied here, which hold the count alone.
   */
  refused?: RefusedLine[];
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
  /**
   * A person corrected lines of a done job's page (docs/corrections.md): per line its id (as in
   * the result's PageXML/ALTO), the text before (the machine reading or an earlier correction) and
   * after. The machine reading is never overwritten: it stays in the page result. `actor` is who,
   * in words a customer reads: the API key's label or the portal user's e-mail.
   */
  PageTextCorrected: {
    page: number;
    lines: Array<{ id: string; before: string; after: string }>;
    actor: CorrectionActor;
    correctedAt: string;
  };
  /**
   * The result archive rebuilt with the corrections up to `correctionVersion` (the job's count of
   * PageTextCorrected); the download serves it from now on. Billing does not change.
   */
  ResultReexported: {
    correctionVersion: number;
    correctedLines: number;
    archiveKey: string;
    archiveBytes: number;
    archiveSha256: string;
    exportedAt: string;
  };
}

/** Who corrected a page: an API key (its id and label) or a portal user (id and e-mail). */
export type CorrectionActor = { kind: 'api_key'; keyId: string; label: string } | { kind: 'user'; userId: string; email: string };

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
  /**
   * The model a submission that names none reads with (docs/models.md, "The account's default
   * model"): `default` (the shipped recognizer) or the id of a model of the account, ready when
   * chosen. A default retired later is read as `default`; the choice stays recorded.
   */
  AccountDefaultModelChosen: { model: string; chosenAt: string };
}

/** Lines of the ground truth left out of training, by why (docs/models.md, "Ground truth"). */
export interface GroundTruthSkips {
  /** No transcription (no TextEquiv/Unicode, no String@CONTENT), or only spaces. */
  noText: number;
  /** Neither an outline nor a baseline. */
  noGeometry: number;
  /** Wholly outside the page image, or with no area inside it. */
  outsideImage: number;
  /** Too small to read: a side under 8 px, or narrower than its text can be written in. */
  tooSmall: number;
  /** Characters no model can learn (control characters, unassigned code points, U+FFFD). */
  unlearnableCharacters: number;
}

/** A model's stream (`model-<id>`): training on an account's ground truth, then the model's life (docs/models.md). */
export interface ModelEventData {
  ModelTrainingQueued: {
    modelId: string;
    accountId: string;
    /** The API key that uploaded the ground truth (id, never the key); null for a portal user or `hwr`. */
    keyId: string | null;
    label: string | null;
    /** `default` (the shipped recognizer) or the id of one of the account's ready models. */
    baseModel: string;
    /** The stored ground truth (ground-truth.ts: pages, their images and their lines with text). */
    groundTruthKey: string;
    pagesTotal: number;
    /** Lines kept for training (their text and geometry are usable). */
    linesTotal: number;
    linesSkipped: GroundTruthSkips;
    warnings: string[];
    createdAt: string;
  };
  ModelTrainingStarted: { startedAt: string };
  /** One epoch of the trainer; epochs only grow (a resumed training's repeated epochs are not recorded again). */
  ModelTrainingProgressed: { epoch: number; trainLoss: number; validationCer: number };
  /**
   * The trained model, measured on the held-out lines with the base model (`…Before`) and with
   * it (`…After`); `notBetter`: it does not read them better than its base (kept, and said so).
   */
  ModelTrained: {
    finishedAt: string;
    cerBefore: number;
    cerAfter: number;
    werBefore: number;
    werAfter: number;
    /** The noise of the measure: `notBetter` unless cerAfter < cerBefore - cerMargin. Absent (0) in events before it. */
    cerMargin?: number;
    linesTrain: number;
    linesValidation: number;
    trainingMinutes: number;
    /** Where the model directory is stored (rec.onnx, charset.txt, manifest.json under it). */
    modelKey: string;
    notBetter: boolean;
  };
  ModelTrainingFailed: { failedAt: string; reason: string };
  ModelTrainingCancelled: { cancelledAt: string; previousState: 'queued' | 'training' };
  /** No new job may use it; jobs queued with it still read with it. */
  ModelRetired: { retiredAt: string };
}

export type EventData = JobEventData & AccountEventData & ModelEventData;

export type DomainEvent<T extends EventType = EventType> = {
  [K in T]: { type: K; data: EventData[K] };
}[T];

export type JobEvent = DomainEvent<keyof JobEventData>;
export type AccountEvent = DomainEvent<keyof AccountEventData>;
export type ModelEvent = DomainEvent<keyof ModelEventData>;

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
export const modelStreamId = (modelId: string): string => `model-${modelId}`;
