#!/usr/bin/env node
// The `hwr` command. Node runs the TypeScript sources directly (type stripping, on by
// default from Node 22.18 and 23.6). The Node that `#!/usr/bin/env node` finds may be
// older (an installed or linked `hwr` on a machine whose Node is 20): then this file,
// plain JavaScript that any Node parses, re-executes the command under the project's
// own Node (the `node` package in dependencies, Node 24), or says in one line what to do.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const main = path.join(root, 'src/cli/main.ts');

function stripsTypes(version) {
  const [major, minor] = version.split('.').map(Number);
  return major >= 24 || (major === 23 && minor >= 6) || (major === 22 && minor >= 18);
}

if (stripsTypes(process.versions.node)) {
  await import(main);
} else {
  const projectNode = path.join(root, 'node_modules/node/bin/node');
  if (!existsSync(projectNode)) {
    process.stderr.write(
      `hwr needs Node >= 22.18 (this is Node ${process.versions.node}): run \`npm install\` in ${root} (it brings Node 24), or put Node 24 first on PATH\n`,
    );
    process.exit(1);
  }
  // The child runs in its own process group, so a signal reaches it exactly once: from
  // us. A Ctrl-C at the terminal comes to this process, which passes it on (a second
  // copy from the terminal would end a graceful `hwr serve` shutdown at once).
  const child = spawn(projectNode, [main, ...process.argv.slice(2)], { stdio: 'inherit', detached: true });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT', 'SIGUSR2']) {
    process.on(signal, () => child.kill(signal));
  }
  child.on('error', (error) => {
    process.stderr.write(`hwr: cannot run ${projectNode}: ${error.message}\n`);
    process.exit(1);
  });
  child.on('exit', (code, signal) => {
    if (signal) {
      process.removeAllListeners(signal);
      process.kill(process.pid, signal);
    }
    process.exit(code ?? 1);
  });
}
