// `npm run schema:snapshot`: migrates a fresh database the way the service does (migrate():
// migrations/ then the projection functions of src/store/install-projections.ts), dumps its
// schema and writes it to test/fixtures/schema/schema.sql, which
// test/integration/schema-snapshot.test.ts compares with a fresh database's dump.
//
// The dump is built from the catalogs: the embedded PostgreSQL package ships no pg_dump, and a
// system pg_dump of another major version refuses a newer server. It lists every schema, extension,
// type, sequence, table (columns, constraints, indexes, triggers), view and function outside
// PostgreSQL's own schemas and extensions' members, each kind sorted by name (collation "C"), with
// no owners, privileges, OIDs, timestamps or database names, under search_path '' so every name
// is schema-qualified as pg_dump writes it. Rows are not schema: schema_migrations' and
// projection_versions' contents are left out. pg-boss's schema (pgboss) is not made by migrate()
// (the queue creates it when it starts), so it is not in the snapshot.
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type pg from 'pg';
import { checkOut, openDatabase } from '../src/db/database.ts';
import { defaultTempClusterDir, freePort, startEmbeddedPostgres } from '../src/db/embedded-postgres.ts';
import { migrate } from '../src/store/migrate.ts';

export const SNAPSHOT_FILE = path.resolve(import.meta.dirname, '../test/fixtures/schema/schema.sql');

/** Objects of schemas that are ours: not PostgreSQL's own, not an extension's members. */
const OUR_SCHEMA = `n.nspname not in ('pg_catalog', 'information_schema') and n.nspname !~ '^pg_(toast|temp_)'`;
const NOT_EXTENSION_MEMBER = (catalog: string, oid: string) =>
  `not exists (select 1 from pg_depend d where d.classid = '${catalog}'::regclass and d.objid = ${oid} and d.deptype = 'e')`;

const HEADER = `-- The schema of a freshly migrated database: migrations/ and the projection functions that
-- src/store/install-projections.ts installs at start (their names carry a hash of the projection code).
-- Made by \`npm run schema:snapshot\` (scripts/schema-snapshot.ts) and checked by
-- test/integration/schema-snapshot.test.ts: do not edit it by hand; a change to a migration or to the
-- projection code shows here, and the snapshot is updated with the change.
`;

/** A migrated database's schema as deterministic, reviewable SQL text. */
export async function dumpSchema(pool: pg.Pool): Promise<string> {
  const client = await checkOut(pool);
  try {
    await client.query('begin isolation level repeatable read read only');
    await client.query(`set local search_path = ''`);
    const major = (await client.query<{ v: string }>(`select current_setting('server_version_num') as v`)).rows[0].v.slice(0, 2);
    const sections = [
      `${HEADER}-- PostgreSQL ${major}\n`,
      await schemas(client),
      await extensions(client),
      await types(client),
      await sequences(client),
      await tables(client),
      await views(client),
      await functions(client),
    ];
    await client.query('commit');
    return sections.filter((section) => section !== '').join('\n');
  } catch (error) {
    await client.query('rollback').catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}

async function rows<T extends pg.QueryResultRow>(client: pg.PoolClient, sql: string): Promise<T[]> {
  return (await client.query<T>(sql)).rows;
}

function section(title: string, blocks: string[]): string {
  return blocks.length === 0 ? '' : `-- ${title}\n\n${blocks.join('\n')}`;
}

async function schemas(client: pg.PoolClient): Promise<string> {
  const found = await rows<{ name: string }>(
    client,
    `select quote_ident(n.nspname) as name from pg_namespace n
      where ${OUR_SCHEMA} and ${NOT_EXTENSION_MEMBER('pg_namespace', 'n.oid')} order by n.nspname collate "C"`,
  );
  return section(
    'Schemas',
    found.map((schema) => `create schema ${schema.name};\n`),
  );
}

async function extensions(client: pg.PoolClient): Promise<string> {
  const found = await rows<{ name: string; schema: string; version: string }>(
    client,
    `select quote_ident(e.extname) as name, quote_ident(n.nspname) as schema, e.extversion as version
       from pg_extension e join pg_namespace n on n.oid = e.extnamespace order by e.extname collate "C"`,
  );
  return section(
    'Extensions',
    found.map((extension) => `create extension ${extension.name} with schema ${extension.schema} version '${extension.version}';\n`),
  );
}

/** Enums, domains and composite types of their own (a table's row type comes with the table). */
async function types(client: pg.PoolClient): Promise<string> {
  const found = await rows<{
    name: string;
    kind: string;
    labels: string[] | null;
    base: string;
    checks: string[] | null;
    notnull: boolean;
    def: string | null;
    attributes: string[] | null;
  }>(
    client,
    `select format('%I.%I', n.nspname, t.typname) as name, t.typtype as kind,
            (select array_agg(quote_literal(e.enumlabel) order by e.enumsortorder) from pg_enum e where e.enumtypid = t.oid) as labels,
            format_type(t.typbasetype, t.typtypmod) as base, t.typnotnull as notnull, t.typdefault as def,
            (select array_agg(format('constraint %I %s', c.conname, pg_get_constraintdef(c.oid)) order by c.conname collate "C")
               from pg_constraint c where c.contypid = t.oid and c.contype = 'c') as checks,
            (select array_agg(format('%I %s', a.attname, format_type(a.atttypid, a.atttypmod)) order by a.attnum)
               from pg_attribute a where a.attrelid = t.typrelid and a.attnum > 0 and not a.attisdropped) as attributes
       from pg_type t join pg_namespace n on n.oid = t.typnamespace
      where ${OUR_SCHEMA} and ${NOT_EXTENSION_MEMBER('pg_type', 't.oid')}
        and (t.typtype in ('e', 'd') or (t.typtype = 'c' and (select c.relkind from pg_class c where c.oid = t.typrelid) = 'c'))
      order by n.nspname collate "C", t.typname collate "C"`,
  );
  return section(
    'Types',
    found.map((type) => {
      if (type.kind === 'e') return `create type ${type.name} as enum (${(type.labels ?? []).join(', ')});\n`;
      if (type.kind === 'c') return `create type ${type.name} as (\n  ${(type.attributes ?? []).join(',\n  ')}\n);\n`;
      const parts = [`create domain ${type.name} as ${type.base}`];
      if (type.def !== null) parts.push(`default ${type.def}`);
      if (type.notnull) parts.push('not null');
      parts.push(...(type.checks ?? []));
      return `${parts.join('\n  ')};\n`;
    }),
  );
}

async function sequences(client: pg.PoolClient): Promise<string> {
  const found = await rows<{
    name: string;
    type: string;
    start: string;
    increment: string;
    min: string;
    max: string;
    cache: string;
    cycle: boolean;
    owner: string | null;
    identity: boolean;
  }>(
    client,
    `select format('%I.%I', n.nspname, c.relname) as name, format_type(s.seqtypid, null) as type,
            s.seqstart::text as start, s.seqincrement::text as increment, s.seqmin::text as min, s.seqmax::text as max,
            s.seqcache::text as cache, s.seqcycle as cycle,
            (select format('%I.%I.%I', tn.nspname, t.relname, a.attname)
               from pg_depend d join pg_class t on t.oid = d.refobjid join pg_namespace tn on tn.oid = t.relnamespace
               join pg_attribute a on a.attrelid = d.refobjid and a.attnum = d.refobjsubid
              where d.classid = 'pg_class'::regclass and d.objid = c.oid and d.refclassid = 'pg_class'::regclass
                and d.deptype in ('a', 'i')) as owner,
            exists (select 1 from pg_depend d where d.classid = 'pg_class'::regclass and d.objid = c.oid and d.deptype = 'i') as identity
       from pg_class c join pg_namespace n on n.oid = c.relnamespace join pg_sequence s on s.seqrelid = c.oid
      where c.relkind = 'S' and ${OUR_SCHEMA} and ${NOT_EXTENSION_MEMBER('pg_class', 'c.oid')}
      order by n.nspname collate "C", c.relname collate "C"`,
  );
  return section(
    'Sequences',
    found.map((sequence) => {
      const options = `as ${sequence.type} start ${sequence.start} increment ${sequence.increment} minvalue ${sequence.min} maxvalue ${sequence.max} cache ${sequence.cache}${sequence.cycle ? ' cycle' : ''}`;
      // An identity column's sequence is made by its table; a serial's is owned by its column.
      if (sequence.owner !== null && sequence.identity)
        return `create sequence ${sequence.name} ${options}; -- identity of ${sequence.owner}\n`;
      return `create sequence ${sequence.name} ${options}${sequence.owner === null ? '' : ` owned by ${sequence.owner}`};\n`;
    }),
  );
}

interface TableRow {
  oid: number;
  name: string;
  kind: string;
  persistence: string;
  options: string[] | null;
  partkey: string | null;
  bound: string | null;
  parents: string[] | null;
  rls: boolean;
  forcerls: boolean;
}

async function tables(client: pg.PoolClient): Promise<string> {
  const found = await rows<TableRow>(
    client,
    `select c.oid, format('%I.%I', n.nspname, c.relname) as name, c.relkind as kind, c.relpersistence as persistence,
            c.reloptions as options, case when c.relkind = 'p' then pg_get_partkeydef(c.oid) end as partkey,
            pg_get_expr(c.relpartbound, c.oid) as bound, c.relrowsecurity as rls, c.relforcerowsecurity as forcerls,
            (select array_agg(format('%I.%I', pn.nspname, p.relname) order by i.inhseqno)
               from pg_inherits i join pg_class p on p.oid = i.inhparent join pg_namespace pn on pn.oid = p.relnamespace
              where i.inhrelid = c.oid) as parents
       from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where c.relkind in ('r', 'p', 'f') and ${OUR_SCHEMA} and ${NOT_EXTENSION_MEMBER('pg_class', 'c.oid')}
      order by n.nspname collate "C", c.relname collate "C"`,
  );
  const blocks: string[] = [];
  for (const table of found) blocks.push(await tableBlock(client, table));
  return section('Tables', blocks);
}

async function tableBlock(client: pg.PoolClient, table: TableRow): Promise<string> {
  const oid = Number(table.oid);
  const columns = await rows<{
    name: string;
    type: string;
    collation: string | null;
    identity: string;
    generated: string;
    def: string | null;
    notnull: boolean;
  }>(
    client,
    `select quote_ident(a.attname) as name, format_type(a.atttypid, a.atttypmod) as type,
            case when a.attcollation <> t.typcollation then (select format('%I.%I', cn.nspname, co.collname)
              from pg_collation co join pg_namespace cn on cn.oid = co.collnamespace where co.oid = a.attcollation) end as collation,
            a.attidentity as identity, a.attgenerated as generated, pg_get_expr(d.adbin, d.adrelid) as def, a.attnotnull as notnull
       from pg_attribute a join pg_type t on t.oid = a.atttypid left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
      where a.attrelid = ${oid} and a.attnum > 0 and not a.attisdropped and a.attislocal
      order by a.attnum`,
  );
  const lines = columns.map((column) => {
    const parts = [column.name, column.type];
    if (column.collation !== null) parts.push(`collate ${column.collation}`);
    if (column.identity === 'a') parts.push('generated always as identity');
    if (column.identity === 'd') parts.push('generated by default as identity');
    if (column.generated === 's') parts.push(`generated always as (${column.def}) stored`);
    else if (column.generated === 'v') parts.push(`generated always as (${column.def}) virtual`);
    else if (column.def !== null) parts.push(`default ${column.def}`);
    if (column.notnull) parts.push('not null');
    return `  ${parts.join(' ')}`;
  });
  const kind = table.kind === 'f' ? 'foreign table' : table.persistence === 'u' ? 'unlogged table' : 'table';
  let create = `create ${kind} ${table.name}`;
  if (table.bound !== null && table.parents !== null) create += ` partition of ${table.parents[0]} ${table.bound}`;
  else create += ` (\n${lines.join(',\n')}\n)`;
  if (table.bound === null && table.parents !== null) create += ` inherits (${table.parents.join(', ')})`;
  if (table.partkey !== null) create += ` partition by ${table.partkey}`;
  if (table.options !== null) create += ` with (${table.options.join(', ')})`;
  const statements = [`${create};`];

  // Constraints; a NOT NULL constraint under its default name is the column's "not null" above.
  const constraints = await rows<{ name: string; def: string }>(
    client,
    `select quote_ident(c.conname) as name, pg_get_constraintdef(c.oid) as def from pg_constraint c
      where c.conrelid = ${oid} and c.conislocal
        and not (c.contype = 'n' and c.conname = (select format('%s_%s_not_null', r.relname, a.attname) from pg_class r
          join pg_attribute a on a.attrelid = r.oid and a.attnum = c.conkey[1] where r.oid = c.conrelid))
      order by c.conname collate "C"`,
  );
  for (const constraint of constraints)
    statements.push(`alter table only ${table.name} add constraint ${constraint.name} ${constraint.def};`);
  // Indexes, but those a constraint above creates.
  const indexes = await rows<{ def: string }>(
    client,
    `select pg_get_indexdef(i.indexrelid) as def from pg_index i join pg_class c on c.oid = i.indexrelid
      where i.indrelid = ${oid} and not exists (select 1 from pg_constraint k where k.conindid = i.indexrelid and k.contype in ('p', 'u', 'x'))
      order by c.relname collate "C"`,
  );
  for (const index of indexes) statements.push(`${index.def};`);
  const triggers = await rows<{ def: string }>(
    client,
    `select pg_get_triggerdef(t.oid) as def from pg_trigger t where t.tgrelid = ${oid} and not t.tgisinternal order by t.tgname collate "C"`,
  );
  for (const trigger of triggers) statements.push(`${trigger.def};`);
  if (table.rls) statements.push(`alter table ${table.name} enable row level security;`);
  if (table.forcerls) statements.push(`alter table ${table.name} force row level security;`);
  const policies = await rows<{ def: string }>(
    client,
    `select format('create policy %I on %s as %s for %s to %s%s%s;', p.polname, p.polrelid::regclass,
              case when p.polpermissive then 'permissive' else 'restrictive' end,
              case p.polcmd when 'r' then 'select' when 'a' then 'insert' when 'w' then 'update' when 'd' then 'delete' else 'all' end,
              case when p.polroles = '{0}' then 'public' else (select string_agg(quote_ident(r.rolname), ', ' order by r.rolname collate "C")
                from pg_roles r where r.oid = any (p.polroles)) end,
              coalesce(' using (' || pg_get_expr(p.polqual, p.polrelid) || ')', ''),
              coalesce(' with check (' || pg_get_expr(p.polwithcheck, p.polrelid) || ')', '')) as def
       from pg_policy p where p.polrelid = ${oid} order by p.polname collate "C"`,
  );
  for (const policy of policies) statements.push(policy.def);
  return `${statements.join('\n')}\n`;
}

async function views(client: pg.PoolClient): Promise<string> {
  const found = await rows<{ oid: number; name: string; kind: string; def: string }>(
    client,
    `select c.oid, format('%I.%I', n.nspname, c.relname) as name, c.relkind as kind, pg_get_viewdef(c.oid, true) as def
       from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where c.relkind in ('v', 'm') and ${OUR_SCHEMA} and ${NOT_EXTENSION_MEMBER('pg_class', 'c.oid')}
      order by n.nspname collate "C", c.relname collate "C"`,
  );
  const blocks: string[] = [];
  for (const view of found) {
    const statements = [`create ${view.kind === 'm' ? 'materialized view' : 'view'} ${view.name} as\n${view.def.replace(/;$/u, '')};`];
    const indexes = await rows<{ def: string }>(
      client,
      `select pg_get_indexdef(i.indexrelid) as def from pg_index i join pg_class c on c.oid = i.indexrelid
        where i.indrelid = ${Number(view.oid)} order by c.relname collate "C"`,
    );
    for (const index of indexes) statements.push(`${index.def};`);
    blocks.push(`${statements.join('\n')}\n`);
  }
  return section('Views', blocks);
}

async function functions(client: pg.PoolClient): Promise<string> {
  const found = await rows<{ kind: string; name: string; def: string | null }>(
    client,
    `select p.prokind as kind, format('%I.%I(%s)', n.nspname, p.proname, pg_get_function_identity_arguments(p.oid)) as name,
            case when p.prokind <> 'a' then pg_get_functiondef(p.oid) end as def
       from pg_proc p join pg_namespace n on n.oid = p.pronamespace
      where ${OUR_SCHEMA} and ${NOT_EXTENSION_MEMBER('pg_proc', 'p.oid')}
      order by n.nspname collate "C", p.proname collate "C", pg_get_function_identity_arguments(p.oid) collate "C"`,
  );
  return section(
    'Functions',
    found.map((fn) => (fn.def === null ? `-- aggregate ${fn.name}\n` : `${fn.def.trimEnd()};\n`)),
  );
}

/** Migrates a new database on a throwaway embedded PostgreSQL and writes its dump to SNAPSHOT_FILE. */
async function main(): Promise<void> {
  const dataDir = defaultTempClusterDir();
  const server = await startEmbeddedPostgres({ dataDir, port: await freePort() });
  try {
    const db = openDatabase(server.url, { max: 2 });
    try {
      await migrate(db.pool);
      const dump = await dumpSchema(db.pool);
      await mkdir(path.dirname(SNAPSHOT_FILE), { recursive: true });
      await writeFile(SNAPSHOT_FILE, dump);
      console.log(`wrote ${path.relative(process.cwd(), SNAPSHOT_FILE)} (${dump.split('\n').length - 1} lines)`);
    } finally {
      await db.close();
    }
  } finally {
    await server.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

if (import.meta.main) await main();
