-- Search across an account's results (docs/search.md, docs/decisions/0039-the-search-index-is-written-from-the-page-results.md).
-- unaccent and pg_trgm ship with PostgreSQL (the embedded one included).
create extension if not exists unaccent;
create extension if not exists pg_trgm;

-- Text as the index compares it: without diacritics (unaccent's rules: é → e, ß → ss, œ → oe,
-- ſ → s), lower case. Immutable (the dictionary is named), so indexes can be built on it.
create function hwr_search_fold(value text) returns text
language sql immutable strict parallel safe
as $$ select lower(public.unaccent('public.unaccent'::regdictionary, value)) $$;

-- The search projection (projections/search.ts): the done jobs whose text is searchable, from
-- JobSucceeded, until ResultExpired. Rebuilt and verified from the log like every projection.
create table search_jobs (
  job_id      uuid        primary key,
  account_id  uuid        not null,
  finished_at timestamptz not null
);
create index search_jobs_account on search_jobs (account_id);

-- The index of the machine's reading: one row per line of a done job's stored page results,
-- written by the export before JobSucceeded (and again by `hwr projections reindex-search`), deleted with the
-- job's files at expiry. `words`: the line's words (text, box, confidence, alternatives);
-- `alternatives`: their alternative readings, space-separated; `terms`: the folded text and
-- alternatives (fuzzy matches); `tsv`: the line's words (weight A), then the alternatives (D).
create table search_lines (
  job_id       uuid     not null,
  account_id   uuid     not null,
  page_number  integer  not null,
  line_index   integer  not null,
  line_id      text     not null,
  text         text     not null,
  words        jsonb    not null,
  alternatives text     not null,
  terms        text     generated always as (hwr_search_fold(text || ' ' || alternatives)) stored,
  tsv          tsvector generated always as (
    setweight(to_tsvector('simple', hwr_search_fold(text)), 'A') || setweight(to_tsvector('simple', hwr_search_fold(alternatives)), 'D')
  ) stored,
  primary key (job_id, page_number, line_index)
);
create index search_lines_line on search_lines (job_id, page_number, line_id);
create index search_lines_tsv on search_lines using gin (tsv);
create index search_lines_trgm on search_lines using gin (terms gin_trgm_ops);

-- People's corrections are searched where they are kept (the corrections projection's table).
create index corrected_lines_tsv on corrected_lines using gin (to_tsvector('simple', hwr_search_fold(text)));
create index corrected_lines_trgm on corrected_lines using gin (hwr_search_fold(text) gin_trgm_ops);
