-- Read models, kept up to date inline by hwr_apply_projections (installed from projections/).

create table job_status (
  job_id                   uuid primary key,
  account_id               uuid        not null,
  state                    text        not null,
  page_count               integer     not null,
  pages_done               integer     not null,
  current_step             text,
  created_at               timestamptz not null,
  started_at               timestamptz,
  finished_at              timestamptz,
  expires_at               timestamptz not null,
  error_message            text,
  warning_message          text,
  options                  jsonb       not null,
  upload_key               text        not null,
  archive_key              text,
  archive_bytes            bigint,
  archive_sha256           text,
  result_expired           boolean     not null,
  callback_state           text,
  callback_attempts        integer     not null,
  callback_next_attempt_at timestamptz,
  callback_last_status     integer,
  version                  integer     not null
);
create index job_status_account on job_status (account_id, created_at);
create index job_status_expiry on job_status (expires_at) where not result_expired;

create table job_pages (
  job_id      uuid    not null,
  page_number integer not null,
  name        text    not null,
  blob_key    text    not null,
  sha256      text    not null,
  bytes       bigint  not null,
  step        text,
  completed   boolean not null,
  result_key  text,
  line_count  integer,
  primary key (job_id, page_number)
);

create table billing (
  job_id      uuid primary key,
  account_id  uuid        not null,
  pages       integer     not null,
  tier        text        not null,
  finished_at timestamptz not null
);
create index billing_account on billing (account_id, finished_at);

create table accounts (
  account_id        uuid primary key,
  name              text        not null unique,
  created_at        timestamptz not null,
  secret_rotated_at timestamptz
);

create table api_keys (
  key_id     uuid primary key,
  account_id uuid        not null,
  label      text        not null,
  prefix     text        not null,
  key_hash   text        not null unique,
  created_at timestamptz not null,
  revoked_at timestamptz
);
create index api_keys_account on api_keys (account_id);

create table idempotency_keys (
  account_id      uuid        not null,
  idempotency_key text        not null,
  request_hash    text        not null,
  job_id          uuid        not null,
  created_at      timestamptz not null,
  primary key (account_id, idempotency_key)
);
