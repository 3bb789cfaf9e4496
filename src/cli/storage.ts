// `hwr storage stats`: blobs and bytes in the configured store (BLOB_STORE) by kind, as one JSON
// line: {"store","jobs","kinds":{"uploads":{"blobs","bytes"},…},"total":{…}}.
import { storageStats } from '../blobs/storage-stats.ts';
import { printJsonLine, UsageError } from './args.ts';
import { withRuntime } from './context.ts';

export async function run(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== 'stats' || rest.length > 0) throw new UsageError('usage: hwr storage stats');
  return withRuntime(async (runtime) => {
    printJsonLine({ store: runtime.config.blobs.store, ...(await storageStats(runtime.blobs)) });
    return 0;
  });
}
