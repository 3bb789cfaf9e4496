// The house's stairs (docs/decisions/0013-folder-layers.md): which folder may import which.
// `npm test` runs `depcruise` with this file before the tests; `npx depcruise src domain projections`
// prints the same. A folder imports only folders on its own layer or below, never one above; no
// two folders import each other (directly or around a loop); and a few folders keep internals
// that only they import. Type-only imports count: a type names the module it comes from.

/** Lowest first. Each entry: a name and the paths (regular expressions) on that layer. */
const LAYERS = [
  { name: 'domain and shared utilities', paths: ['^domain/', '^src/shared/'] },
  { name: 'recognition and export library', paths: ['^src/recognition/', '^src/export/'] },
  { name: 'configuration and logging', paths: ['^src/platform/'] },
  {
    name: 'services of the platform (database, blob store, outages, metrics, callbacks, intake)',
    paths: ['^src/db/', '^src/blobs/', '^src/outage/', '^src/metrics/', '^src/callbacks/', '^src/intake/'],
  },
  { name: 'event store and projections', paths: ['^projections/', '^src/store/'] },
  { name: 'queue adapter and the pipeline the workers run', paths: ['^src/queue/', '^src/pipeline/'] },
  { name: 'use cases', paths: ['^src/use-cases/'] },
  { name: 'workers', paths: ['^src/workers/'] },
  { name: 'process runtime', paths: ['^src/runtime/'] },
  { name: 'HTTP API and portal', paths: ['^src/http/', '^src/portal/'] },
  { name: 'process entry points (servers, command line, error catalog)', paths: ['^src/server/', '^src/cli/', '^src/errors[.]ts$'] },
];

const layerRules = LAYERS.slice(0, -1).map((layer, index) => ({
  name: `layer-${index + 1}-imports-upward`,
  comment: `${layer.name} may not import a layer above it (${LAYERS.slice(index + 1)
    .map((above) => above.name)
    .join('; ')})`,
  severity: 'error',
  from: { path: layer.paths },
  to: { path: LAYERS.slice(index + 1).flatMap((above) => above.paths) },
}));

/** @type {import('dependency-cruiser').IConfiguration} */
export default {
  forbidden: [
    ...layerRules,
    {
      name: 'folder-cycle',
      comment:
        'Two folders that reach each other through their imports: one of them is on the wrong layer, or a module is in the wrong folder.',
      severity: 'error',
      scope: 'folder',
      // `src` as a folder would be all of src, its subfolders folded in: it closes false cycles.
      from: { path: '^(src/.+|domain|projections)' },
      to: { circular: true, path: '^(src/.+|domain|projections)', viaNot: '^src$' },
    },
    {
      name: 'client-imports-server',
      comment: 'The published client (hwr/client) imports only src/shared: it runs where no server code is installed.',
      severity: 'error',
      from: { path: '^src/client/' },
      to: { path: '^(src|domain|projections)/', pathNot: ['^src/client/', '^src/shared/'] },
    },
    {
      name: 'shared-imports-anything',
      comment: 'src/shared holds what the client and the server both need; it imports nothing of the project.',
      severity: 'error',
      from: { path: '^src/shared/' },
      to: { path: '^(src|domain|projections)/', pathNot: '^src/shared/' },
    },
    {
      name: 'domain-does-io',
      comment: 'domain/ is pure: no packages, and of Node only crypto (hashes that derive ids).',
      severity: 'error',
      from: { path: '^domain/' },
      to: { dependencyTypes: ['core', 'npm', 'npm-dev', 'npm-optional', 'npm-peer', 'npm-no-pkg', 'npm-unknown'], pathNot: '^crypto$' },
    },
    {
      name: 'recognition-reads-service-settings-or-storage',
      comment:
        'The recognition library takes its settings as arguments, logs through the pino Logger it is given, and reads and writes no storage (src/pipeline does).',
      severity: 'error',
      from: { path: '^src/(recognition|export)/' },
      to: { path: ['^src/platform/', '^src/blobs/', '^src/db/'] },
    },
    {
      name: 'http-routes-internal',
      comment: 'A route module is mounted by the HTTP app alone; the portal calls use cases and HTTP mechanics, not routes.',
      severity: 'error',
      from: { pathNot: '^src/(http|server)/' },
      to: { path: '^src/http/routes/' },
    },
    {
      name: 'portal-internal',
      comment: 'Outside the portal only its mount point (portal.ts) and its error catalog (errors.ts) are imported.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/portal/' },
      to: { path: '^src/portal/', pathNot: '^src/portal/(portal|errors)[.]ts$' },
    },
    {
      name: 'worker-internals',
      comment:
        "Outside src/workers only start-workers.ts and start-trainer.ts (the roles' entries) are imported: a task handler's, a sweep's or a mechanism's inside is the workers' own.",
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/workers/' },
      to: { path: '^src/workers/', pathNot: '^src/workers/start-(workers|trainer)[.]ts$' },
    },
    {
      name: 'pg-boss-outside-queue-adapter',
      comment:
        'Everything pg-boss goes through src/queue (its types too: src/queue/boss.ts re-exports them); test/unit/house-rules.test.ts checks that its tables are queried nowhere else.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/queue/' },
      to: { path: 'node_modules/pg-boss/' },
    },
    {
      name: 'no-unresolvable',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'] },
    skipAnalysisNotInRules: true,
  },
};
