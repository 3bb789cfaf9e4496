import type { Queryable } from '../src/db/database.ts';
import type { Projection } from './projection.ts';

// Serves GET /v1/process-scan/<id>/pages/<n> and the training from a job's corrections
// (docs/corrections.md): each corrected page's text version and each corrected line's current
// text, from PageTextCorrected. The machine's reading stays in the page's stored result.
export const correctionsProjection: Projection = {
  name: 'corrections',
  tables: ['corrected_pages', 'corrected_lines'],
  handles: ['PageTextCorrected'],
  apply: `
declare
  job uuid := substring(e.stream_id from 5)::uuid;
  page integer := (e.data->>'page')::int;
  at timestamptz := (e.data->>'correctedAt')::timestamptz;
begin
  insert into corrected_pages (job_id, page_number, text_version, corrected_at) values (job, page, 1, at)
  on conflict (job_id, page_number) do update set text_version = corrected_pages.text_version + 1, corrected_at = at;
  insert into corrected_lines (job_id, page_number, line_id, text, corrected_at)
  select job, page, l->>'id', l->>'after', at from jsonb_array_elements(e.data->'lines') as l
  on conflict (job_id, page_number, line_id) do update set text = excluded.text, corrected_at = excluded.corrected_at;
end`,
};

// Reads of this read model.

export interface PageCorrections {
  /** The page's text version: its number of saves (0: never corrected). */
  version: number;
  correctedAt: Date | null;
  /** Line id → corrected text. */
  lines: Map<string, string>;
}

/** A page's corrections (none: version 0, no lines). */
export async function readPageCorrections(db: Queryable, jobId: string, page: number): Promise<PageCorrections> {
  const [pages, lines] = await Promise.all([
    db.query<{ text_version: number; corrected_at: Date }>(
      'select text_version, corrected_at from corrected_pages where job_id = $1 and page_number = $2',
      [jobId, page],
    ),
    db.query<{ line_id: string; text: string }>('select line_id, text from corrected_lines where job_id = $1 and page_number = $2', [
      jobId,
      page,
    ]),
  ]);
  return {
    version: pages.rows[0]?.text_version ?? 0,
    correctedAt: pages.rows[0]?.corrected_at ?? null,
    lines: new Map(lines.rows.map((row) => [row.line_id, row.text])),
  };
}

/** A job's corrected pages: page number → its text version. */
export async function readCorrectedPages(db: Queryable, jobId: string): Promise<Map<number, number>> {
  const result = await db.query<{ page_number: number; text_version: number }>(
    'select page_number, text_version from corrected_pages where job_id = $1 order by page_number',
    [jobId],
  );
  return new Map(result.rows.map((row) => [row.page_number, row.text_version]));
}
