#!/usr/bin/env node
import { processIo } from './cli-io.js';
import { runCli } from './run-cli.js';

// The exit code is set, not forced with process.exit(), so stdout is drained first.
process.exitCode = await runCli(process.argv.slice(2), processIo());
