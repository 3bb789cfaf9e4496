// Installs each projection's apply function and the dispatcher that the append
// function calls for every event. Projections are code, not schema: they are
// (re)installed at every start, after migrations, under the migration lock.
import type pg from 'pg';
import { PROJECTIONS } from '../../projections/index.ts';

export function projectionFunctionName(name: string): string {
  return `hwr_project_${name}`;
}

export async function installProjections(client: pg.PoolClient): Promise<void> {
  const statements = PROJECTIONS.map(
    (projection) =>
      `create or replace function ${projectionFunctionName(projection.name)}(e events) returns void language plpgsql as $body$${projection.apply}$body$;`,
  );
  const dispatch = PROJECTIONS.map((projection) => {
    const types = projection.handles.map((type) => `'${type}'`).join(', ');
    return `  if e.type in (${types}) then perform ${projectionFunctionName(projection.name)}(e); end if;`;
  }).join('\n');
  statements.push(`create or replace function hwr_apply_projections(e events) returns void language plpgsql as $body$
begin
${dispatch}
end$body$;`);
  await client.query('begin');
  try {
    for (const statement of statements) await client.query(statement);
    await client.query('commit');
  } catch (error) {
    await client.query('rollback');
    throw error;
  }
}
