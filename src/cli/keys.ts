import { createApiKey, listApiKeys, revokeApiKey } from '../use-cases/accounts.ts';
import { parseArgs, printJsonLine, stringOption, UsageError } from './args.ts';
import { withRuntime } from './context.ts';

const USAGE = 'usage: hwr keys create --account NAME --label LABEL | hwr keys list --account NAME | hwr keys revoke KEY_ID';

export async function run(args: string[]): Promise<number> {
  const parsed = parseArgs(args);
  const [action, keyId] = parsed.positionals;
  const account = stringOption(parsed, 'account');
  return withRuntime(async (runtime) => {
    switch (action) {
      case 'create': {
        const label = stringOption(parsed, 'label');
        if (!account || !label) throw new UsageError(USAGE);
        const created = await createApiKey(runtime.bus, account, label);
        // The key alone on one line: it is shown once and never again.
        process.stdout.write(`${created.key}\n`);
        return 0;
      }
      case 'list':
        if (!account) throw new UsageError(USAGE);
        for (const key of await listApiKeys(runtime.db.pool, account)) printJsonLine(key);
        return 0;
      case 'revoke':
        if (!keyId) throw new UsageError(USAGE);
        await revokeApiKey(runtime.bus, keyId);
        return 0;
      default:
        throw new UsageError(USAGE);
    }
  });
}
