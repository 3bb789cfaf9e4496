// Installs the projection code: each projection's apply function and the dispatcher that the
// append function calls with the events it inserted. Projections are code, not schema: they are
// installed at every start, after migrations, under the migration lock, under names that carry
// a hash of the code (`hwr_project_<name>_<version>`, `hwr_apply_projections_<version>`), so
// two versions of the service running side by side each keep projecting with their own code.
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

/** The dispatcher of this process's projection code, passed to every append and replay. */
export const PROJECTION_DISPATCHER = dispatcherName(projectionsVersion());

export async function installProjections(client: pg.PoolClient, projections: readonly Projection[] = PROJECTIONS): Promise<string> {
  const version = projectionsVersion(projections);
  const statements = projections.map(
    (projection) =>
      `create or replace function ${projectionFunctionName(projection.name, version)}(e events) returns void language plpgsql as $body$${projection.apply}$body$;`,
  );
  const dispatch = projections
    .map((projection) => {
      const types = projection.handles.map((type) => `'${type}'`).join(', ');
      return `    if e.type in (${types}) then perform ${projectionFunctionName(projection.name, version)}(e); end if;`;
    })
    .join('\n');
  statements.push(`create or replace function ${dispatcherName(version)}(es events[]) returns void language plpgsql as $body$
declare
  e events;
begin
  foreach e in array es loop
${dispatch}
  end loop;
end$body$;`);
  await client.query('begin');
  try {
    for (const statement of statements) await client.query(statement);
    await client.query('insert into projection_versions (version) values ($1) on conflict (version) do update set installed_at = now()', [version]);
    await dropOldVersions(client);
    await client.query('commit');
  } catch (error) {
    await client.query('rollback');
    throw error;
  }
  return version;
}

async function dropOldVersions(client: pg.PoolClient): Promise<void> {
  const old = await client.query<{ version: string }>('select version from projection_versions order by installed_at desc offset $1', [VERSIONS_KEPT]);
  for (const { version } of old.rows) {
    const functions = await client.query<{ signature: string }>(
      `select p.oid::regprocedure::text as signature from pg_proc p
        where p.pronamespace = current_schema()::regnamespace and (p.proname like $1 or p.proname = $2)`,
      [`hwr\\_project\\_%\\_${version}`, dispatcherName(version)],
    );
    for (const { signature } of functions.rows) await client.query(`drop function if exists ${signature}`);
    await client.query('delete from projection_versions where version = $1', [version]);
  }
}
