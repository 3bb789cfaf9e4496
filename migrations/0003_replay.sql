-- Replays a batch of the log through the projections, in commit-safe order, for
-- rebuild and verify (which point search_path at scratch tables first).
-- p_safe: only transactions older than every one in flight (see src/store/read-all.ts);
-- the final catch-up runs under the exclusive append lock, where every event is committed.
create function hwr_replay_batch(p_after_tx xid8, p_after_pos bigint, p_limit integer, p_safe boolean)
returns table (replayed integer, last_tx xid8, last_pos bigint)
language plpgsql as $$
declare
  e events;
begin
  replayed := 0;
  last_tx := p_after_tx;
  last_pos := p_after_pos;
  for e in
    select * from events
    where (transaction_id, global_position) > (p_after_tx, p_after_pos)
      and (not p_safe or transaction_id < pg_snapshot_xmin(pg_current_snapshot()))
    order by transaction_id, global_position
    limit p_limit
  loop
    perform hwr_apply_projections(e);
    replayed := replayed + 1;
    last_tx := e.transaction_id;
    last_pos := e.global_position;
  end loop;
  return next;
end
$$;
