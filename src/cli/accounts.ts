import { createAccount, rotateWebhookSecret } from '../use-cases/accounts.ts';
import { parseArgs, printJsonLine, UsageError } from './args.ts';
import { withRuntime } from './context.ts';

export async function run(args: string[]): Promise<number> {
  const { positionals } = parseArgs(args);
  const [action, name] = positionals;
  if (!name || (action !== 'create' && action !== 'rotate-secret'))
    throw new UsageError('usage: hwr accounts create NAME | hwr accounts rotate-secret NAME');
  return withRuntime(async (runtime) => {
    if (action === 'create') {
      const account = await createAccount(runtime.bus, name);
      printJsonLine({ account_id: account.accountId, name: account.name, webhook_secret: account.webhookSecret });
    } else {
      process.stdout.write(`${await rotateWebhookSecret(runtime.bus, name)}\n`);
    }
    return 0;
  });
}
