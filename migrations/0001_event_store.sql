-- The event store: one append-only table for every stream (jobs and accounts).
create table events (
  global_position bigint generated always as identity primary key,
  stream_id       text        not null,
  stream_version  integer     not null check (stream_version > 0),
  type            text        not null,
  data            jsonb       not null,
  metadata        jsonb       not null default '{}',
  transaction_id  xid8        not null default pg_current_xact_id(),
  recorded_at     timestamptz not null default now(),
  unique (stream_id, stream_version)
);

-- Whole-log reads go in commit-safe order: (transaction_id, global_position).
create index events_commit_order on events (transaction_id, global_position);

-- Secrets stay out of the event log (auditors export it); the log keeps fingerprints.
create table account_secrets (
  account_id     uuid primary key,
  webhook_secret text        not null,
  updated_at     timestamptz not null default now()
);

-- Key usage is operational data, not a fact worth an event per request.
create table api_key_usage (
  key_id       uuid primary key,
  last_used_at timestamptz not null
);

-- Append: check the expected version, insert the events, apply the inline projections,
-- all in the caller's transaction. Appends hold a shared advisory lock that a rebuild
-- takes exclusively for its final catch-up, so no append slips between replay and swap.
create function hwr_append_events(p_stream_id text, p_expected_version integer, p_events jsonb)
returns setof events
language plpgsql as $$
declare
  current_version integer;
  event jsonb;
  inserted events;
  offset_in_batch integer := 0;
begin
  perform pg_advisory_xact_lock_shared(7285001);
  select coalesce(max(stream_version), 0) into current_version from events where stream_id = p_stream_id;
  if p_expected_version is not null and current_version <> p_expected_version then
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
    perform hwr_apply_projections(inserted);
    return next inserted;
  end loop;
end
$$;
