// `hwr search QUERY [--fuzzy 0|1|2] [--job JOB_ID] [--limit N] [--all]`: the key's account's hits
// over HTTP (GET /v1/search, docs/search.md), one JSON line each, best first. --url/HWR_URL and
// --key/HWR_API_KEY as the other client commands. Exit 0 (hits or none), 2 usage, 4 service
// error (5xx or unreachable), 5 refused (a 4xx).
import { parseArgs, printJsonLine, stringOption, UsageError } from './args.ts';

const USAGE =
  'usage: hwr search QUERY [--fuzzy 0|1|2] [--job JOB_ID] [--limit N] [--all] [--url URL] [--key KEY]\n' +
  '  QUERY: words ("quoted words" a phrase, `or`, -word); diacritics and case ignored\n' +
  '  --fuzzy 1|2  forgive typos (2: more); --all: every hit, page after page (else the first --limit, 20)';
const KNOWN = ['fuzzy', 'job', 'limit', 'all', 'url', 'key', 'help'];

export async function run(argv: string[]): Promise<number> {
  const parsed = parseArgs(argv, ['all', 'help']);
  if (parsed.options.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const unknown = Object.keys(parsed.options).find((name) => !KNOWN.includes(name));
  if (unknown) throw new UsageError(`unknown option --${unknown}`);
  const query = parsed.positionals.join(' ').trim();
  if (query === '') throw new UsageError(USAGE);
  const url = stringOption(parsed, 'url') ?? process.env.HWR_URL ?? `http://localhost:${process.env.PORT || 8080}`;
  if (!/^https?:\/\/[^/]/i.test(url)) throw new UsageError(`the service URL ${url} is not an http:// or https:// URL (--url, HWR_URL)`);
  const key = stringOption(parsed, 'key') ?? process.env.HWR_API_KEY;
  if (!key) throw new UsageError('no API key: set HWR_API_KEY or --key');
  const params = new URLSearchParams({ q: query });
  for (const [option, name] of [
    ['fuzzy', 'fuzzy'],
    ['job', 'job_id'],
    ['limit', 'limit'],
  ] as const) {
    const value = stringOption(parsed, option);
    if (value !== null) params.set(name, value);
  }
  for (;;) {
    let response: Response;
    try {
      response = await fetch(new URL(`/v1/search?${params}`, url), { headers: { 'X-API-Key': key, Accept: 'application/json' } });
    } catch (error) {
      process.stderr.write(
        `hwr search: the service at ${url} is unreachable (${error instanceof Error ? error.message : String(error)})\n`,
      );
      return 4;
    }
    const body = (await response.json().catch(() => null)) as { hits?: unknown[]; next_cursor?: string | null; detail?: string } | null;
    if (!response.ok || !body?.hits) {
      const refused = response.status >= 400 && response.status < 500;
      process.stderr.write(`hwr search: ${refused ? 'refused: ' : ''}${response.status} ${body?.detail ?? response.statusText}\n`);
      return refused ? 5 : 4;
    }
    for (const hit of body.hits) printJsonLine(hit);
    if (!parsed.options.all || !body.next_cursor) {
      if (body.next_cursor) process.stderr.write(`hwr search: more hits: --all, or GET /v1/search?…&cursor=${body.next_cursor}\n`);
      return 0;
    }
    params.set('cursor', body.next_cursor);
  }
}
