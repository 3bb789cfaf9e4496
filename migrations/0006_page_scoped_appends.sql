-- Pages of one job run side by side (docs/architecture.md, "Consistency boundaries").
-- A page command decides from the job-level events and its own page's events, and appends
-- only if none of those changed since it read them; other pages' events do not conflict.

-- The page an event is about: set for StepStarted/PageCompleted of a page, null for job-level
-- facts (including the job's export step). Generated, so old histories get it too.
alter table events add column page integer
  generated always as (case when type in ('StepStarted', 'PageCompleted') then (data->>'page')::integer end) stored;

-- The narrow reads: a stream's job-level events, and one page's events.
create index events_stream_page on events (stream_id, page, stream_version);

-- Each page of a job is completed once, whatever the application does.
create unique index events_page_completed_once on events (stream_id, page) where type = 'PageCompleted';

-- Appends to one stream take a per-stream lock until commit, so versions are handed out in
-- commit order and concurrent appends queue instead of failing on the unique version index.
-- p_projections: the dispatcher function of the caller's projection code
--   (hwr_apply_projections_<version>(events), installed at start), so that two versions of the
--   service running side by side in a rolling deploy each project with their own code.
-- p_scoped: p_expected_version is the last version the caller read of its scope, and the
--   append fails (HWR01) only if an event of that scope (job-level events, plus p_page's events
--   when p_page is set) was appended after it. Unscoped: the whole stream must be at p_expected_version.
-- p_durable false: the transaction's commit does not wait for the disk (progress facts whose loss
--   in a database crash a retried task re-creates; any later durable commit makes them durable too).
-- The previous append function, hwr_append_events(text, integer, jsonb), stays for processes of
-- the previous version until they are gone.
create function hwr_append_to_stream(
  p_projections text, p_stream_id text, p_expected_version integer, p_events jsonb,
  p_scoped boolean, p_page integer, p_durable boolean)
returns setof events
language plpgsql as $$
declare
  current_version integer;
  event jsonb;
  inserted events;
  offset_in_batch integer := 0;
begin
  if not p_durable then
    perform set_config('synchronous_commit', 'off', true);
  end if;
  perform pg_advisory_xact_lock_shared(7285001);
  perform pg_advisory_xact_lock(7285003, hashtext(p_stream_id));
  select coalesce(max(stream_version), 0) into current_version from events where stream_id = p_stream_id;
  if p_scoped then
    if exists (select 1 from events
               where stream_id = p_stream_id and stream_version > p_expected_version
                 and (page is null or page = p_page)) then
      raise exception using
        errcode = 'HWR01',
        message = format('stream %s has new events in the scope of page %s since version %s',
                         p_stream_id, coalesce(p_page::text, '(job)'), p_expected_version),
        detail = current_version::text;
    end if;
  elsif p_expected_version is not null and current_version <> p_expected_version then
    raise exception using
      errcode = 'HWR01',
      message = format('stream %s is at version %s, expected %s', p_stream_id, current_version, p_expected_version),
      detail = current_version::text;
  end if;
  for event in select value from jsonb_array_elements(p_events) loop
    offset_in_batch := offset_in_batch + 1;
    insert into events (stream_id, stream_version, type, data, metadata)
    values (p_stream_id, current_version + offset_in_batch, event->>'type', event->'data', coalesce(event->'metadata', '{}'))
    returning * into inserted;
    execute format('select %I($1)', p_projections) using inserted;
    return next inserted;
  end loop;
end
$$;

-- The job's current step is the earliest step of its unfinished pages (hwr_job_current_step,
-- 0004): its query's order matches this index, so it is found through it instead of a scan of
-- all the job's pages at every page event.
create index job_pages_open_step on job_pages
  (job_id, array_position(array['layout', 'recognition', 'correction', 'export'], coalesce(step, 'layout')))
  where not completed;
