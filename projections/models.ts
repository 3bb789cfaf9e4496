import type { Queryable } from '../src/db/database.ts';
import type { Projection } from './projection.ts';

// Serves GET /v1/models and /v1/models/<id> (docs/models.md): one row per model, from its
// stream `model-<id>`. `progress_history` keeps every recorded epoch (epoch, train loss,
// validation CER), the curve a client draws; the row's own epoch columns are the last one.
export const modelsProjection: Projection = {
  name: 'models',
  tables: ['models'],
  handles: [
    'ModelTrainingQueued',
    'ModelTrainingStarted',
    'ModelTrainingProgressed',
    'ModelTrained',
    'ModelTrainingFailed',
    'ModelTrainingCancelled',
    'ModelRetired',
  ],
  apply: `
declare
  model uuid := substring(e.stream_id from 7)::uuid;
begin
  case e.type
  when 'ModelTrainingQueued' then
    insert into models (model_id, account_id, label, base_model, state, created_at, ground_truth_key, pages_total,
      lines_total, lines_skipped, warnings, progress_history, version)
    values (model, (e.data->>'accountId')::uuid, e.data->>'label', e.data->>'baseModel', 'queued',
      (e.data->>'createdAt')::timestamptz, e.data->>'groundTruthKey', (e.data->>'pagesTotal')::int,
      (e.data->>'linesTotal')::int, e.data->'linesSkipped', e.data->'warnings', '[]'::jsonb, e.stream_version);
  when 'ModelTrainingStarted' then
    update models set state = 'training', started_at = (e.data->>'startedAt')::timestamptz, version = e.stream_version
      where model_id = model;
  when 'ModelTrainingProgressed' then
    update models set epoch = (e.data->>'epoch')::int, train_loss = (e.data->>'trainLoss')::float8,
      validation_cer = (e.data->>'validationCer')::float8,
      progress_history = progress_history || jsonb_build_array(jsonb_build_object(
        'epoch', e.data->'epoch', 'train_loss', e.data->'trainLoss', 'validation_cer', e.data->'validationCer',
        'recorded_at', to_char(e.recorded_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))),
      version = e.stream_version
      where model_id = model;
  when 'ModelTrained' then
    update models set state = 'ready', finished_at = (e.data->>'finishedAt')::timestamptz,
      cer_before = (e.data->>'cerBefore')::float8, cer_after = (e.data->>'cerAfter')::float8,
      wer_before = (e.data->>'werBefore')::float8, wer_after = (e.data->>'werAfter')::float8,
      lines_train = (e.data->>'linesTrain')::int, lines_validation = (e.data->>'linesValidation')::int,
      training_minutes = (e.data->>'trainingMinutes')::float8, model_key = e.data->>'modelKey',
      not_better = (e.data->>'notBetter')::boolean, version = e.stream_version
      where model_id = model;
  when 'ModelTrainingFailed' then
    update models set state = 'failed', finished_at = (e.data->>'failedAt')::timestamptz, error_message = e.data->>'reason',
      version = e.stream_version where model_id = model;
  when 'ModelTrainingCancelled' then
    update models set state = 'cancelled', finished_at = (e.data->>'cancelledAt')::timestamptz, version = e.stream_version
      where model_id = model;
  when 'ModelRetired' then
    update models set state = 'retired', version = e.stream_version where model_id = model;
  end case;
end`,
};

// Reads of this read model: the models routes, a submission naming a model (or a base model).

export interface ModelProgressPoint {
  epoch: number;
  train_loss: number;
  validation_cer: number;
  recorded_at: string;
}

export interface ModelRow {
  model_id: string;
  account_id: string;
  label: string | null;
  base_model: string;
  state: string;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
  ground_truth_key: string;
  pages_total: number;
  lines_total: number;
  lines_skipped: {
    noText: number;
    noGeometry: number;
    outsideImage: number;
    tooSmall: number;
    unlearnableCharacters: number;
  };
  warnings: string[];
  epoch: number | null;
  train_loss: number | null;
  validation_cer: number | null;
  progress_history: ModelProgressPoint[];
  cer_before: number | null;
  cer_after: number | null;
  wer_before: number | null;
  wer_after: number | null;
  lines_train: number | null;
  lines_validation: number | null;
  training_minutes: number | null;
  model_key: string | null;
  not_better: boolean | null;
  error_message: string | null;
}

const MODEL_COLUMNS = `model_id, account_id, label, base_model, state, created_at, started_at, finished_at, ground_truth_key,
  pages_total, lines_total, lines_skipped, warnings, epoch, train_loss, validation_cer, progress_history, cer_before, cer_after,
  wer_before, wer_after, lines_train, lines_validation, training_minutes, model_key, not_better, error_message`;

/** A model of `accountId`; undefined for no such model, and for another account's. */
export async function readAccountModel(db: Queryable, modelId: string, accountId: string): Promise<ModelRow | undefined> {
  const result = await db.query<ModelRow>(`select ${MODEL_COLUMNS} from models where model_id = $1 and account_id = $2`, [
    modelId,
    accountId,
  ]);
  return result.rows[0];
}

/** The ids among `modelIds` of models that have a row (the orphan-folder sweep). */
export async function readKnownModelIds(db: Queryable, modelIds: readonly string[]): Promise<Set<string>> {
  const result = await db.query<{ model_id: string }>('select model_id::text from models where model_id = any($1::uuid[])', [modelIds]);
  return new Set(result.rows.map((row) => row.model_id));
}

/** An account's models, newest first, at most `limit`. */
export async function listAccountModels(db: Queryable, accountId: string, limit: number): Promise<ModelRow[]> {
  const result = await db.query<ModelRow>(
    `select ${MODEL_COLUMNS} from models where account_id = $1 order by created_at desc, model_id desc limit $2`,
    [accountId, limit],
  );
  return result.rows;
}

/** A model's state (`queued`, `training`, …); undefined for no such model. */
export async function readModelState(db: Queryable, modelId: string): Promise<string | undefined> {
  const result = await db.query<{ state: string }>('select state from models where model_id = $1', [modelId]);
  return result.rows[0]?.state;
}

export interface TrainedLines {
  account: string;
  account_id: string;
  /** Models whose training completed (`ModelTrained`) in the period: ready ones, and those retired since. */
  models: number;
  /** Their `lines_train`: the ground-truth lines each was trained on (held-out lines not counted). */
  lines: number;
}

/**
 * Trained lines billed per account (docs/billing.md, "Trained models"): the models whose training
 * completed in the period, by the `finishedAt` of their `ModelTrained` (`to` exclusive). Only
 * `ModelTrained` sets `lines_train`, so a failed or cancelled training is never counted, and a
 * ready model retired later stays counted in the period it became ready.
 */
export async function trainedLinesReport(
  db: Queryable,
  filter: { accountId?: string | null; from?: Date | null; to?: Date | null },
): Promise<TrainedLines[]> {
  const result = await db.query<{ name: string; account_id: string; models: string; lines: string }>(
    `select a.name, m.account_id, count(*) as models, sum(m.lines_train) as lines
     from models m join accounts a using (account_id)
     where m.lines_train is not null
       and ($1::uuid is null or m.account_id = $1)
       and ($2::timestamptz is null or m.finished_at >= $2)
       and ($3::timestamptz is null or m.finished_at < $3)
     group by a.name, m.account_id order by a.name`,
    [filter.accountId ?? null, filter.from ?? null, filter.to ?? null],
  );
  return result.rows.map((row) => ({
    account: row.name,
    account_id: row.account_id,
    models: Number(row.models),
    lines: Number(row.lines),
  }));
}
