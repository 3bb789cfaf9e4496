-- Projection code is installed at every start under names that carry its version (a hash of
-- the code): hwr_project_<name>_<version>(events), the dispatcher
-- hwr_apply_projections_<version>(events) and the replay hwr_replay_batch_<version>(...).
-- Two versions of the service running side by side in a rolling deploy each call their own;
-- neither replaces the other's functions. (src/store/install-projections.ts)

-- Which versions were installed; old ones are dropped at install beyond the newest few.
create table projection_versions (
  version      text primary key,
  installed_at timestamptz not null default now()
);
