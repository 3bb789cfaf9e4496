-- The search fold also turns < and > into spaces. PostgreSQL's text parser reads `<Quincey>` as
-- an XML tag, which no text search configuration indexes, so a word written in angle brackets
-- (an editor's mark, an uncertain reading) was never found. Same signature: the generated columns
-- and the indexes built on the function are computed again below.
create or replace function hwr_search_fold(value text) returns text
language sql immutable strict parallel safe
as $$ select translate(lower(public.unaccent('public.unaccent'::regdictionary, value)), '<>', '  ') $$;

-- a stored generated column is computed again when its row is written
update search_lines set text = text where strpos(text, '<') > 0 or strpos(text, '>') > 0
  or strpos(alternatives, '<') > 0 or strpos(alternatives, '>') > 0;
reindex index corrected_lines_tsv;
reindex index corrected_lines_trgm;
