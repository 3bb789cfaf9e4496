// Installs the projection code: each projection's apply function, the dispatcher that the
// append function calls for every event it inserts, and the replay of a batch of the log
// (rebuild, verify). Projections are code, not schema: they are installed at every start, after
// migrations, under the migration lock, under names that carry a hash of the code
// (`hwr_project_<name>_<version>`, `hwr_apply_projections_<version>`, `hwr_replay_batch_<version>`),
// so two versions of the service running side by side each keep projecting with their own code.
// The replay is generated per version too, so that its loop calls the dispatcher statically.
import { createHash } from 'node:crypto';
import type pg from 'pg';
import { PROJECTIONS, type Projection } from '../../projections/index.ts';

/** Installed versions kept; older ones are dropped at install (a rolling deploy spans two or three). */
const VERSIONS_KEPT = 5;

/** A hash of the projection code: names, handled types and bodies, in order. */
export function projectionsVersion(projections: readonly Projection[] = PROJECTIONS): string {
  const hash = createHash('sha256');
  for (const projection of projections) hash.update(JSON.stringify([projection.name, projection.handles, projection.apply]));
  return hash.digest('hex').slice(0, 12);
}

export function projectionFunctionName(name: string, version: string): string {
  return `hwr_project_${name}_${version}`;
}

export function dispatcherName(version: string): string {
  return `hwr_apply_projections_${version}`;
}

export function replayFunctionName(version: string): string {
  return `hwr_replay_batch_${version}`;
}

/** The dispatcher of this process's projection code, passed to every append. */
export const PROJECTION_DISPATCHER = dispatcherName(projectionsVersion());
/** The replay of this process's projection code (rebuild, verify). */
export const PROJECTION_REPLAY = replayFunctionName(projectionsVersion());

export async function installProjections(client: pg.PoolClient, projections: readonly Projection[] = PROJECTIONS): Promise<string> {
  const version = projectionsVersion(projections);
  const statements = [
    ...projections.map((projection) => projectionFunction(projection, version)),
    dispatcherFunction(projections, version),
    replayFunction(version),
  ];
  await client.query('begin');
  try {
    for (const statement of statements) await client.query(statement);
    await client.query('insert into projection_versions (version) values ($1) on conflict (version) do update set installed_at = now()', [
      version,
    ]);
    await dropOldVersions(client);
    await client.query('commit');
  } catch (error) {
    await client.query('rollback');
    throw error;
  }
  return version;
}

/** One projection's apply function: its SQL body, under the version's name. */
function projectionFunction(projection: Projection, version: string): string {
  return `create or replace function ${projectionFunctionName(projection.name, version)}(e events) returns void language plpgsql as $body$${projection.apply}$body$;`;
}

/** The dispatcher the append calls for every event it inserts: each projection that handles the event's type. */
function dispatcherFunction(projections: readonly Projection[], version: string): string {
  const dispatch = projections
    .map((projection) => {
      const types = projection.handles.map((type) => `'${type}'`).join(', ');
      return `    if e.type in (${types}) then perform ${projectionFunctionName(projection.name, version)}(e); end if;`;
    })
    .join('\n');
  return `create or replace function ${dispatcherName(version)}(e events) returns void language plpgsql as $body$
begin
${dispatch}
end$body$;`;
}

/**
 * The replay of a batch of the log (rebuild, verify), in commit-safe order (p_safe: only
 * transactions older than every one in flight; the final catch-up runs under the exclusive append
 * lock), calling the version's dispatcher statically.
 *
 * migrations/0003_replay.sql holds the same loop as the unversioned `hwr_replay_batch`, calling
 * the unversioned `hwr_apply_projections`: that migration is history (forward-only, applied in
 * deployed databases, never edited; its function stays in the schema for processes of the version
 * before versioned projections). This is the code: the replay changes here, and the change shows
 * in test/fixtures/schema/schema.sql.
 */
function replayFunction(version: string): string {
  return `create or replace function ${replayFunctionName(version)}(p_after_tx xid8, p_after_pos bigint, p_limit integer, p_safe boolean)
returns table (replayed integer, last_tx xid8, last_pos bigint) language plpgsql as $body$
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
    perform ${dispatcherName(version)}(e);
    replayed := replayed + 1;
    last_tx := e.transaction_id;
    last_pos := e.global_position;
  end loop;
  return next;
end$body$;`;
}

async function dropOldVersions(client: pg.PoolClient): Promise<void> {
  const old = await client.query<{ version: string }>('select version from projection_versions order by installed_at desc offset $1', [
    VERSIONS_KEPT,
  ]);
  for (const { version } of old.rows) {
    const functions = await client.query<{ signature: string }>(
      `select p.oid::regprocedure::text as signature from pg_proc p
        where p.pronamespace = current_schema()::regnamespace and (p.proname like $1 or p.proname in ($2, $3))`,
      [`hwr\\_project\\_%\\_${version}`, dispatcherName(version), replayFunctionName(version)],
    );
    for (const { signature } of functions.rows) await client.query(`drop function if exists ${signature}`);
    await client.query('delete from projection_versions where version = $1', [version]);
  }
}
