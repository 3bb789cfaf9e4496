import { requireAccountId } from '../use-cases/accounts.ts';
import { billingReport } from '../../projections/billing.ts';
import { parseArgs, printJsonLine, stringOption, UsageError } from './args.ts';
import { withRuntime } from './context.ts';

/** `--from`/`--to` take ISO dates or timestamps; `--to` is exclusive. */
export async function run(args: string[]): Promise<number> {
  const parsed = parseArgs(args);
  const from = parseDate(stringOption(parsed, 'from'), '--from');
  const to = parseDate(stringOption(parsed, 'to'), '--to');
  const account = stringOption(parsed, 'account');
  return withRuntime(async (runtime) => {
    const accountId = account ? await requireAccountId(runtime.db.pool, account) : null;
    for (const line of await billingReport(runtime.db.pool, { accountId, from, to })) printJsonLine(line);
    return 0;
  });
}

function parseDate(value: string | null, name: string): Date | null {
  if (value === null) return null;
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) throw new UsageError(`${name} must be a date such as 2026-11-01, got ${value}`);
  return date;
}
