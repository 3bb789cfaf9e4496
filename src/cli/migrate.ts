import { withRuntime } from './context.ts';

// Migrations run at every start; this command runs only them and reports.
export async function run(): Promise<number> {
  await withRuntime(async () => {});
  process.stdout.write('migrations applied\n');
  return 0;
}
