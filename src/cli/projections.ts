import { rebuildProjections, verifyProjections } from '../store/replay-projections.ts';
import { requireAccountId } from '../use-cases/accounts.ts';
import { reindexSearch } from '../use-cases/search.ts';
import { parseArgs, printJsonLine, stringOption, UsageError } from './args.ts';
import { withRuntime } from './context.ts';
import { isUuid } from '../shared/uuid.ts';

const USAGE = 'usage: hwr projections rebuild|verify | hwr projections reindex-search [--all | --job JOB_ID] [--account NAME]';

export async function run(args: string[]): Promise<number> {
  const parsed = parseArgs(args, ['all']);
  const [action] = parsed.positionals;
  if (action !== 'rebuild' && action !== 'verify' && action !== 'reindex-search') throw new UsageError(USAGE);
  if (action !== 'reindex-search') {
    const option = Object.keys(parsed.options)[0];
    if (option !== undefined) throw new UsageError(`--${option} is an option of reindex-search only`);
  }
  if (action === 'reindex-search') return reindex(parsed);
  return withRuntime(
    async (runtime) => {
      if (action === 'rebuild') {
        const report = await rebuildProjections(runtime.db.pool);
        printJsonLine({ rebuilt: report.tables, events: report.events, seconds: Number(report.seconds.toFixed(3)) });
        return 0;
      }
      const report = await verifyProjections(runtime.db.pool);
      for (const difference of report.differences) printJsonLine(difference);
      printJsonLine({ verified: report.tables, events: report.events, differences: report.differences.length });
      return report.differences.length === 0 ? 0 : 1;
      // A replay of the whole log runs as long as the log is long: no statement timeout.
    },
    { statementTimeoutMs: 0 },
  );
}

/**
 * `hwr projections reindex-search`: the search index's rows written again from the jobs' stored
 * page results (docs/search.md, "Reindexing"): by default the searchable jobs that have none; with
 * --all every searchable job, with --job one, whatever rows they have; --account: its jobs only.
 * One JSON line a job (`job_id`, `lines`, `changed`), then a summary. Exit 1 where --job names a
 * job that is not searchable (not done, expired, unknown, or not the --account's).
 */
async function reindex(parsed: ReturnType<typeof parseArgs>): Promise<number> {
  const all = parsed.options.all === true;
  if (typeof parsed.options.all === 'string') throw new UsageError('--all takes no value');
  const jobId = stringOption(parsed, 'job');
  const account = stringOption(parsed, 'account');
  if (jobId !== null && !isUuid(jobId)) throw new UsageError(`--job must be a job id (a UUID), got ${jobId}`);
  if (all && jobId !== null) throw new UsageError('--all or --job, not both');
  return withRuntime(
    async (runtime) => {
      const accountId = account ? await requireAccountId(runtime.db.pool, account) : null;
      const started = performance.now();
      const reindexed = await reindexSearch(runtime, { all, jobId: jobId?.toLowerCase() ?? null, accountId });
      for (const job of reindexed) printJsonLine({ job_id: job.jobId, lines: job.lines, changed: job.changed });
      printJsonLine({
        reindexed: reindexed.length,
        changed: reindexed.filter((job) => job.changed).length,
        lines: reindexed.reduce((sum, job) => sum + job.lines, 0),
        seconds: Number(((performance.now() - started) / 1000).toFixed(3)),
      });
      if (jobId !== null && reindexed.length === 0) {
        process.stderr.write(
          `hwr projections: job ${jobId} is not searchable${account ? ` in account ${account}` : ''} (not done, its results expired, or no such job)\n`,
        );
        return 1;
      }
      return 0;
    },
    { statementTimeoutMs: 0 },
  );
}
