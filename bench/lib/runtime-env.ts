// The runtime settings `npm start`, `npm run hwr` and the image give the service's processes
// (package.json's scripts, the Dockerfile's ENV; docs/deployment.md, "Memory"), for the benchmarks'
// child processes, so that their memory and speed are the service's: one glibc malloc arena, large
// blocks kept in the heap (mmap and trim thresholds), tcmalloc preloaded where Debian's
// libtcmalloc-minimal4 is installed (ADR 0053), and V8's
// semi-spaces at most 4 MB, put before the caller's own NODE_OPTIONS (a later flag wins), as
// `npm start` does. A variable the caller set is kept.
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';

const SERVICE_V8_FLAGS = '--max-semi-space-size=4';
const TCMALLOC = 'libtcmalloc_minimal.so.4';

export function serviceRuntimeEnv(
  env: NodeJS.ProcessEnv = process.env,
): Record<'MALLOC_ARENA_MAX' | 'MALLOC_MMAP_THRESHOLD_' | 'MALLOC_TRIM_THRESHOLD_' | 'LD_PRELOAD' | 'NODE_OPTIONS', string> {
  return {
    MALLOC_ARENA_MAX: env.MALLOC_ARENA_MAX ?? '1',
    MALLOC_MMAP_THRESHOLD_: env.MALLOC_MMAP_THRESHOLD_ ?? '268435456',
    MALLOC_TRIM_THRESHOLD_: env.MALLOC_TRIM_THRESHOLD_ ?? '536870912',
    LD_PRELOAD: env.LD_PRELOAD ?? installedTcmalloc(),
    NODE_OPTIONS: `${SERVICE_V8_FLAGS} ${env.NODE_OPTIONS ?? ''}`.trim(),
  };
}

/**
 * The path `npm start` preloads: the first /usr/lib/<triplet>-linux-gnu/libtcmalloc_minimal.so.4 in
 * name order (package.json's `ls` of the same glob), or '' where none is installed.
 */
export function installedTcmalloc(libraryRoot = '/usr/lib'): string {
  let triplets: string[];
  try {
    triplets = readdirSync(libraryRoot).filter((name) => name.endsWith('-linux-gnu'));
  } catch {
    return '';
  }
  for (const triplet of triplets.sort()) {
    const file = path.join(libraryRoot, triplet, TCMALLOC);
    if (existsSync(file)) return file;
  }
  return '';
}
