#!/usr/bin/env node
// `skystack` executable: runs the dispatcher in src/cli/main.ts and sets the exit code.
import { main } from './cli/main.js';

process.exitCode = await main(process.argv.slice(2));
