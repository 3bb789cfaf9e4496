// `hwr`: one module per command group, loaded on demand so that `hwr recognize`
// does not start a database and `hwr serve` does not load what it does not need.
// Each module exports `run(args: string[]): Promise<number>` (the exit code).
import { parseArgs, UsageError } from './args.ts';

/**
 * `options`: the options an operator command takes; any other is a usage error before it runs (a
 * misspelt `--acount` ran as if absent, and `serve --rol worker` started the API too). Commands
 * without `options` (the clients, `recognize`) check their own.
 */
interface Command {
  summary: string;
  options?: readonly string[];
  load: () => Promise<{ run(args: string[]): Promise<number> }>;
}

const COMMANDS: Record<string, Command> = {
  serve: { summary: 'serve [--role api|worker|trainer|all]   run the service', options: ['role'], load: () => import('./serve.ts') },
  migrate: { summary: 'migrate                         apply database migrations', options: [], load: () => import('./migrate.ts') },
  accounts: { summary: 'accounts create NAME | rotate-secret NAME', options: [], load: () => import('./accounts.ts') },
  keys: {
    summary: 'keys create --account NAME --label LABEL | keys list --account NAME | keys revoke KEY_ID',
    options: ['account', 'label'],
    load: () => import('./keys.ts'),
  },
  users: {
    summary: 'users invite --account NAME --email E | users list --account NAME   portal users',
    options: ['account', 'email'],
    load: () => import('./users.ts'),
  },
  jobs: { summary: 'jobs events JOB_ID               a job history as JSON lines', options: [], load: () => import('./jobs.ts') },
  projections: {
    summary:
      'projections rebuild|verify | projections reindex-search [--all | --job ID] [--account NAME]   the search index from the stored results',
    options: ['all', 'job', 'account'],
    load: () => import('./projections.ts'),
  },
  billing: {
    summary: 'billing [--account NAME] [--from DATE] [--to DATE]',
    options: ['account', 'from', 'to'],
    load: () => import('./billing.ts'),
  },
  storage: { summary: 'storage stats                    blobs and bytes stored, by kind', options: [], load: () => import('./storage.ts') },
  recognize: { summary: 'recognize IMAGE... [--json]     run layout and recognition on images', load: () => import('./recognize.ts') },
  // Clients of a running service over HTTP (--url/HWR_URL, --key/HWR_API_KEY; docs/client.md).
  submit: {
    summary: 'submit PATH... [--model ID] [--wait] [--out result.zip]   submit a ZIP, folder or images; follow the job',
    load: () => client('submit'),
  },
  status: { summary: 'status JOB_ID [--wait] [--out FILE]', load: () => client('status') },
  result: { summary: 'result JOB_ID [--out FILE]        download the result archive', load: () => client('result') },
  cancel: { summary: 'cancel JOB_ID', load: () => client('cancel') },
  events: { summary: 'events JOB_ID                    the job history over HTTP', load: () => client('events') },
  usage: { summary: 'usage [--from DATE] [--to DATE]  billed pages and trained lines of your account', load: () => client('usage') },
  search: {
    summary: 'search QUERY [--fuzzy 0|1|2] [--job ID] [--limit N] [--all]   find words in your done jobs (docs/search.md)',
    load: () => import('./search.ts'),
  },
  models: {
    summary:
      'models train PATH... [--label L] [--base ID] [--wait] | models list | models status MODEL_ID [--wait] | models retire MODEL_ID   train and manage your models',
    load: () => client('models'),
  },
};

async function client(name: 'submit' | 'status' | 'result' | 'cancel' | 'events' | 'usage' | 'models') {
  const module = await import('./client-commands.ts');
  return { run: module.commandFor(name) };
}

function usage(): string {
  return ['usage: hwr <command> [options]', '', ...Object.values(COMMANDS).map((command) => `  hwr ${command.summary}`)].join('\n');
}

const [name, ...args] = process.argv.slice(2);
const command = name ? COMMANDS[name] : undefined;
if (!command) {
  if (name !== undefined && name !== '--help' && name !== 'help') process.stderr.write(`hwr: unknown command ${name}\n`);
  process.stderr.write(`${usage()}\n`);
  process.exitCode = name === undefined || name === '--help' || name === 'help' ? 0 : 2;
} else {
  // A reader that stops early (`hwr jobs events JOB | head -1`) closes the pipe. The output it
  // wanted is out; the command still ends as it would (its database and files closed), writing
  // the rest nowhere, rather than crashing on EPIPE with a stack trace.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
  });
  const commandUsage = `usage: hwr ${command.summary.replace(/ {2,}.*$/, '')}`;
  // Read as the commands read them (parseArgs): a value that looks like an option (`--label -h`) is a value.
  const parsed = parseArgs(args);
  if (command.options && ('help' in parsed.options || parsed.positionals.includes('-h'))) {
    process.stdout.write(`${commandUsage}\n`);
    process.exit(0);
  }
  try {
    if (command.options) {
      const unknown = Object.keys(parsed.options).find((name) => !command.options?.includes(name));
      if (unknown !== undefined) throw new UsageError(`unknown option --${unknown}`);
    }
    const module = await command.load();
    process.exitCode = await module.run(args);
  } catch (error) {
    const usageError = error instanceof UsageError;
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(
      // A command's own usage errors may be its usage line already.
      `hwr ${name}: ${message}\n${usageError && !message.startsWith('usage:') ? `${commandUsage}\n` : ''}`,
    );
    // At once: a handle left open by a half-started command must not keep a failed process alive.
    // A usage error is 2, as for the client commands: 1 stays the command's own failure.
    process.exit(usageError ? 2 : 1);
  }
}
