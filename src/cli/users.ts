import { inviteUser, listUsers } from '../use-cases/users.ts';
import { parseArgs, printJsonLine, stringOption, UsageError } from './args.ts';
import { withRuntime } from './context.ts';

const USAGE = 'usage: hwr users invite --account NAME --email EMAIL | hwr users list --account NAME';

export async function run(args: string[]): Promise<number> {
  const parsed = parseArgs(args);
  const [action] = parsed.positionals;
  const account = stringOption(parsed, 'account');
  return withRuntime(async (runtime) => {
    switch (action) {
      case 'invite': {
        const email = stringOption(parsed, 'email');
        if (!account || !email) throw new UsageError(USAGE);
        const invitation = await inviteUser(runtime.bus, account, email, runtime.config.baseUrl);
        // The setup link alone on one line: it works once, until it expires (said on stderr).
        process.stdout.write(`${invitation.url}\n`);
        process.stderr.write(`setup link for ${invitation.email}, single use, expires ${invitation.expiresAt.toISOString()}\n`);
        return 0;
      }
      case 'list': {
        if (!account) throw new UsageError(USAGE);
        for (const user of await listUsers(runtime.db.pool, account)) {
          printJsonLine({
            id: user.user_id,
            email: user.email,
            invited_at: user.invited_at.toISOString(),
            created_at: user.created_at?.toISOString() ?? null,
            last_sign_in_at: user.last_sign_in_at?.toISOString() ?? null,
          });
        }
        return 0;
      }
      default:
        throw new UsageError(USAGE);
    }
  });
}
