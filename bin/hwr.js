#!/usr/bin/env node
// The `hwr` command. Node runs the TypeScript sources directly (type stripping).
import '../src/cli/main.ts';
