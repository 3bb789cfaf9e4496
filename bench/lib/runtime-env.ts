// The runtime settings `npm start`, `npm run hwr` and the image give the service's processes
// (package.json's scripts, the Dockerfile's ENV; docs/deployment.md, "Memory"), for the benchmarks'
// child processes, so that their memory is the service's: two glibc malloc arenas, and V8's
// semi-spaces at most 4 MB, put before the caller's own NODE_OPTIONS (a later flag wins), as
// `npm start` does. A variable the caller set is kept.
const SERVICE_V8_FLAGS = '--max-semi-space-size=4';

export function serviceRuntimeEnv(env: NodeJS.ProcessEnv = process.env): { MALLOC_ARENA_MAX: string; NODE_OPTIONS: string } {
  return {
    MALLOC_ARENA_MAX: env.MALLOC_ARENA_MAX ?? '2',
    NODE_OPTIONS: `${SERVICE_V8_FLAGS} ${env.NODE_OPTIONS ?? ''}`.trim(),
  };
}
