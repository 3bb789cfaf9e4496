// `hwr`: one module per command group, loaded on demand so that `hwr recognize`
// does not start a database and `hwr serve` does not load what it does not need.
// Each module exports `run(args: string[]): Promise<number>` (the exit code).

const COMMANDS: Record<string, { summary: string; load: () => Promise<{ run(args: string[]): Promise<number> }> }> = {
  serve: { summary: 'serve [--role api|worker|all]   run the service', load: () => import('./serve.ts') },
  migrate: { summary: 'migrate                         apply database migrations', load: () => import('./migrate.ts') },
  accounts: { summary: 'accounts create NAME | rotate-secret NAME', load: () => import('./accounts.ts') },
  keys: { summary: 'keys create|list|revoke ...', load: () => import('./keys.ts') },
  jobs: { summary: 'jobs events JOB_ID               a job history as JSON lines', load: () => import('./jobs.ts') },
  projections: { summary: 'projections rebuild|verify', load: () => import('./projections.ts') },
  billing: { summary: 'billing [--account NAME] [--from DATE] [--to DATE]', load: () => import('./billing.ts') },
  recognize: { summary: 'recognize IMAGE... [--json]     run layout and recognition on images', load: () => import('./recognize.ts') },
};

function usage(): string {
  return ['usage: hwr <command> [options]', '', ...Object.values(COMMANDS).map((command) => `  hwr ${command.summary}`)].join('\n');
}

const [name, ...args] = process.argv.slice(2);
const command = name ? COMMANDS[name] : undefined;
if (!command) {
  process.stderr.write(`${usage()}\n`);
  process.exitCode = name === undefined || name === '--help' || name === 'help' ? 0 : 2;
} else {
  try {
    const module = await command.load();
    process.exitCode = await module.run(args);
  } catch (error) {
    process.stderr.write(`hwr ${name}: ${error instanceof Error ? error.message : String(error)}\n`);
    // At once: a handle left open by a half-started command must not keep a failed process alive.
    process.exit(1);
  }
}
