-- Projection code is installed at every start under a name that carries its version (a hash of
-- the code): hwr_project_<name>_<version>(events) and the dispatcher
-- hwr_apply_projections_<version>(events[]). Two versions of the service running side by side
-- in a rolling deploy each call their own; neither replaces the other's functions.

-- Which versions were installed, newest last; old ones are dropped at install beyond the newest few.
create table projection_versions (
  version      text primary key,
  installed_at timestamptz not null default now()
);

-- Replay (rebuild, verify) through the caller's projection code: one dispatch per batch, in
-- commit-safe order. The previous hwr_replay_batch(xid8, bigint, integer, boolean) stays for
-- processes of the previous version.
create function hwr_replay_batch(p_projections text, p_after_tx xid8, p_after_pos bigint, p_limit integer, p_safe boolean)
returns table (replayed integer, last_tx xid8, last_pos bigint)
language plpgsql as $$
declare
  batch events[];
begin
  batch := array(
    select e from events e
    where (e.transaction_id, e.global_position) > (p_after_tx, p_after_pos)
      and (not p_safe or e.transaction_id < pg_snapshot_xmin(pg_current_snapshot()))
    order by e.transaction_id, e.global_position
    limit p_limit);
  replayed := coalesce(array_length(batch, 1), 0);
  if replayed = 0 then
    last_tx := p_after_tx;
    last_pos := p_after_pos;
  else
    execute format('select %I($1)', p_projections) using batch;
    last_tx := batch[replayed].transaction_id;
    last_pos := batch[replayed].global_position;
  end if;
  return next;
end
$$;
