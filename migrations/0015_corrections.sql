-- People's corrections of a done job's text (docs/corrections.md): the read model of the
-- corrections projection (projections/corrections.ts), kept from PageTextCorrected on the job
-- streams. `corrected_pages`: each corrected page's text version (its number of saves) and the
-- last save; `corrected_lines`: each corrected line's current text. The machine's reading is not
-- here: it stays in the page's stored result.
create table corrected_pages (
  job_id       uuid        not null,
  page_number  integer     not null,
  text_version integer     not null,
  corrected_at timestamptz not null,
  primary key (job_id, page_number)
);
create table corrected_lines (
  job_id       uuid        not null,
  page_number  integer     not null,
  line_id      text        not null,
  text         text        not null,
  corrected_at timestamptz not null,
  primary key (job_id, page_number, line_id)
);
