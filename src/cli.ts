#!/usr/bin/env node
// `skystack` executable: runs the dispatcher in src/cli/main.ts and sets the exit code. A pipeline
// command started without the allocator settings runs again in a child that has them
// (allocator-env.ts); that is decided here, not in main(), which tests also call in-process.
import { main } from './cli/main.js';
import { runInQuietChild, wantsAllocatorChild, wantsQuietChild } from './cli/quiet-native.js';

const argv = process.argv.slice(2);
const relaunch = wantsAllocatorChild(argv[0]) && !wantsQuietChild(argv[0]) && !argv.slice(1).some((a) => a === '--help' || a === '-h');
process.exitCode = relaunch ? await runInQuietChild(argv, false) : await main(argv);
