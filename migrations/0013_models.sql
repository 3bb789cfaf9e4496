-- Models trained on an account's ground truth (docs/models.md): the read model of the models
-- projection (projections/models.ts), kept from the model streams (`model-<id>`). One row per
-- model: its state, the ground truth it was queued with, the trainer's progress (the last epoch,
-- and every epoch in `progress_history` for the curve of validation CER), the figures measured on
-- the held-out lines when it is ready, and why it failed.
create table models (
  model_id           uuid primary key,
  account_id         uuid             not null,
  label              text,
  base_model         text             not null,
  state              text             not null,
  created_at         timestamptz      not null,
  started_at         timestamptz,
  finished_at        timestamptz,
  ground_truth_key   text             not null,
  pages_total        integer          not null,
  lines_total        integer          not null,
  lines_skipped      jsonb            not null,
  warnings           jsonb            not null,
  epoch              integer,
  train_loss         double precision,
  validation_cer     double precision,
  progress_history   jsonb            not null,
  cer_before         double precision,
  cer_after          double precision,
  wer_before         double precision,
  wer_after          double precision,
  lines_train        integer,
  lines_validation   integer,
  training_minutes   double precision,
  model_key          text,
  not_better         boolean,
  error_message      text,
  version            integer          not null
);
-- GET /v1/models: an account's models, newest first.
create index models_account_created on models (account_id, created_at desc, model_id desc);
