import { rebuildProjections, verifyProjections } from '../store/replay-projections.ts';
import { parseArgs, printJsonLine, UsageError } from './args.ts';
import { withRuntime } from './context.ts';

export async function run(args: string[]): Promise<number> {
  const [action] = parseArgs(args).positionals;
  if (action !== 'rebuild' && action !== 'verify') throw new UsageError('usage: hwr projections rebuild|verify');
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
