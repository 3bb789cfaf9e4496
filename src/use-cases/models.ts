// Models trained on an account's ground truth (docs/models.md): queueing a training from an
// uploaded ground-truth ZIP, reading an account's models, cancelling or retiring one, the check a
// submission (or a training's base) makes of the model it names, and the account's default model
// (the one a submission that names none reads with). The API's routes and the portal's pages call
// these; the trainer role runs the training itself with the model commands on the bus.
import { randomUUID } from 'node:crypto';
import type { EventMetadata } from '../../domain/events.ts';
import { DEFAULT_MODEL, type ModelState } from '../../domain/model.ts';
import type { ModelCommand } from '../../domain/model-decide.ts';
import { Rejection } from '../../domain/rejections.ts';
import { readAccountDefaultModel } from '../../projections/accounts.ts';
import { listAccountModels, type ModelRow, readAccountModel } from '../../projections/models.ts';
import { groundTruthPrefix, modelPrefix } from '../blobs/blob-keys.ts';
import type { BlobStore } from '../blobs/blob-store.ts';
import type { Database, Queryable } from '../db/database.ts';
import { intakeGroundTruthZip } from '../intake/ground-truth-zip.ts';
import type { Config } from '../platform/config.ts';
import type { CommandBus } from './command-bus.ts';
import { ModelError } from './errors.ts';

/** Models one listing returns at most (newest first). */
export const MODELS_LISTED = 1000;
/** The longest label, in characters. */
export const MAX_LABEL_LENGTH = 100;

export interface ModelDeps {
  config: Config;
  db: Database;
  bus: CommandBus;
  blobs: BlobStore;
}

export interface TrainingRequest {
  accountId: string;
  /** The API key that uploads; null for a portal user (then `actor`) or `hwr`. */
  keyId: string | null;
  actor?: string;
  /** The uploaded ZIP (a temporary file; the caller removes it). */
  upload: { path: string; name: string };
  label: string | null;
  /** `default`, or the id of a ready model of the account (checked here). */
  baseModel: string;
  requestId?: string;
}

/**
 * Takes a ground-truth upload in (ground-truth-zip.ts) and queues its training: ModelTrainingQueued
 * and the training task in one transaction. A refusal, or an append that fails, leaves nothing of
 * the model in the blob store. Throws ModelError, intake's and ground truth's coded errors.
 */
export async function queueModelTraining(deps: ModelDeps, request: TrainingRequest): Promise<ModelRow> {
  if (request.baseModel !== DEFAULT_MODEL) await usableModel(deps.db.pool, request.accountId, request.baseModel, 'base_model');
  const modelId = randomUUID();
  try {
    const intake = await intakeGroundTruthZip(request.upload.path, {
      limits: deps.config.limits,
      blobs: deps.blobs,
      keyPrefix: groundTruthPrefix(modelId),
      uploadName: request.upload.name,
    });
    await deps.bus.model(
      modelId,
      {
        type: 'QueueModelTraining',
        modelId,
        accountId: request.accountId,
        keyId: request.keyId,
        label: request.label,
        baseModel: request.baseModel,
        groundTruthKey: intake.key,
        pagesTotal: intake.pagesTotal,
        linesTotal: intake.linesTotal,
        linesSkipped: intake.linesSkipped,
        warnings: intake.warnings,
        now: new Date(),
      },
      { actor: request.actor ?? request.keyId ?? 'api', requestId: request.requestId },
    );
  } catch (error) {
    await deps.blobs.deletePrefix(modelPrefix(modelId)).catch(() => {});
    throw error;
  }
  const row = await readAccountModel(deps.db.pool, modelId, request.accountId);
  if (!row) throw new Error(`model ${modelId} was recorded but has no row`);
  return row;
}

/** A label as given: trimmed, null when empty; ModelError invalid_label when too long or with control characters. */
export function checkLabel(raw: string | null): string | null {
  const label = raw?.trim() ?? '';
  if (label === '') return null;
  if ([...label].length > MAX_LABEL_LENGTH || /\p{Cc}/u.test(label))
    throw new ModelError('invalid_label', `label must be at most ${MAX_LABEL_LENGTH} characters, without control characters`);
  return label;
}

/**
 * The model `modelId` names, when the account may read pages with it (or train on from it):
 * ModelError invalid_model when the account has no such model (another account's is not told
 * apart), model_not_ready when it is not ready. `field` names the form field in the detail.
 */
export async function usableModel(db: Queryable, accountId: string, modelId: string, field: 'model' | 'base_model'): Promise<ModelRow> {
  const row = await readAccountModel(db, modelId, accountId);
  if (!row)
    throw new ModelError(
      'invalid_model',
      `${field} must be ${DEFAULT_MODEL} or the id of one of the account's models; there is no model ${modelId}`,
    );
  if (row.state !== 'ready') {
    const when = row.state === 'queued' || row.state === 'training' ? '; use it once it is ready' : '';
    throw new ModelError('model_not_ready', `${field} ${modelId} is ${row.state}, not ready${when}`);
  }
  return row;
}

/** A model of the account; Rejection model_not_found (404) for none, or another account's. */
export async function accountModel(db: Queryable, accountId: string, modelId: string): Promise<ModelRow> {
  const row = await readAccountModel(db, modelId, accountId);
  if (!row) throw new Rejection('model_not_found', `No model ${modelId}.`);
  return row;
}

/** The account's models, newest first. */
export function accountModels(db: Queryable, accountId: string): Promise<ModelRow[]> {
  return listAccountModels(db, accountId, MODELS_LISTED);
}

/**
 * DELETE of a model: cancels a queued or training model, retires a ready one; a second DELETE
 * of a cancelled or retired model changes nothing. A failed model: Rejection model_already_finished.
 */
export async function cancelOrRetireModel(
  deps: Pick<ModelDeps, 'db' | 'bus'>,
  accountId: string,
  modelId: string,
  metadata: EventMetadata,
): Promise<ModelRow> {
  await accountModel(deps.db.pool, accountId, modelId);
  const now = new Date();
  const command = (state: ModelState): ModelCommand =>
    state.status === 'ready' || state.status === 'retired' ? { type: 'RetireModel', now } : { type: 'CancelModelTraining', now };
  await deps.bus.model(modelId, command, metadata);
  return accountModel(deps.db.pool, accountId, modelId);
}

/** The account's default model: as chosen, and what a submission that names no model reads with. */
export interface AccountDefaultModel {
  /** `default` (the shipped recognizer) or a model id, as last chosen. */
  chosen: string;
  chosenAt: Date | null;
  /** The chosen model while it is ready; `default` once it is retired (or for `default`). */
  effective: string;
  /** The chosen model's row; null for `default`. */
  model: ModelRow | null;
}

export async function accountDefaultModel(db: Queryable, accountId: string): Promise<AccountDefaultModel> {
  const row = await readAccountDefaultModel(db, accountId);
  const chosen = row?.default_model ?? DEFAULT_MODEL;
  const chosenAt = row?.default_model_chosen_at ?? null;
  if (chosen === DEFAULT_MODEL) return { chosen, chosenAt, effective: DEFAULT_MODEL, model: null };
  const model = (await readAccountModel(db, chosen, accountId)) ?? null;
  return { chosen, chosenAt, effective: model?.state === 'ready' ? chosen : DEFAULT_MODEL, model };
}

/**
 * Makes `modelId` (`default`, or a ready model of the account: usableModel's refusals otherwise)
 * the account's default model: AccountDefaultModelChosen on the account's stream; the same choice
 * again records nothing.
 */
export async function chooseDefaultModel(
  deps: Pick<ModelDeps, 'db' | 'bus'>,
  accountId: string,
  modelId: string,
  metadata: EventMetadata,
): Promise<AccountDefaultModel> {
  if (modelId !== DEFAULT_MODEL) await usableModel(deps.db.pool, accountId, modelId, 'model');
  await deps.bus.account(accountId, { type: 'ChooseDefaultModel', model: modelId, now: new Date() }, metadata);
  return accountDefaultModel(deps.db.pool, accountId);
}
