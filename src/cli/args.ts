// A small argument parser: `--name value`, `--name=value`, `--flag`, positionals.
export interface ParsedArgs {
  positionals: string[];
  options: Record<string, string | true>;
}

export function parseArgs(args: string[], flags: readonly string[] = []): ParsedArgs {
  const positionals: string[] = [];
  const options: Record<string, string | true> = {};
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (!arg.startsWith('--')) {
      positionals.push(arg);
      continue;
    }
    const [name, inline] = arg.slice(2).split(/=(.*)/s, 2);
    if (inline !== undefined) options[name] = inline;
    else if (flags.includes(name)) options[name] = true;
    else if (i + 1 < args.length) options[name] = args[++i];
    // Last on the line with no value: an option that needs one says so where it is read, and one
    // that does not exist is reported as unknown (it was "needs a value").
    else options[name] = true;
  }
  return { positionals, options };
}

export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

export function stringOption(parsed: ParsedArgs, name: string): string | null {
  const value = parsed.options[name];
  if (value === true) throw new UsageError(`--${name} needs a value`);
  return typeof value === 'string' ? value : null;
}

export function printJsonLine(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}
