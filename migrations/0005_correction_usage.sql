-- LLM correction usage per page (model and tokens), so it can be reported per account.
create table correction_usage (
  job_id        uuid        not null,
  page_number   integer     not null,
  account_id    uuid        not null,
  provider      text        not null,
  model         text        not null,
  input_tokens  integer     not null,
  output_tokens integer     not null,
  recorded_at   timestamptz not null,
  primary key (job_id, page_number)
);
create index correction_usage_account on correction_usage (account_id, recorded_at);
