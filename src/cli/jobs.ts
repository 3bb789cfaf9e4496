import { jobStreamId } from '../../domain/events.ts';
import { readStream } from '../store/read-stream.ts';
import { parseArgs, printJsonLine, UsageError } from './args.ts';
import { withRuntime } from './context.ts';
import { eventJson } from '../store/event-json.ts';

export async function run(args: string[]): Promise<number> {
  const [action, jobId] = parseArgs(args).positionals;
  if (action !== 'events' || !jobId) throw new UsageError('usage: hwr jobs events JOB_ID');
  if (!/^[0-9a-f-]{36}$/i.test(jobId)) throw new UsageError(`not a job id: ${jobId}`);
  return withRuntime(async (runtime) => {
    const events = await readStream(runtime.db.pool, jobStreamId(jobId.toLowerCase()));
    if (events.length === 0) {
      process.stderr.write(`no job ${jobId}\n`);
      return 1;
    }
    for (const event of events) printJsonLine(eventJson(event));
    return 0;
  });
}
