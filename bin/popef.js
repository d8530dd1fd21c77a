#!/usr/bin/env node
// Thin shim: runs the CLI, turns Ctrl-C into a cooperative abort (so that
// partial outputs are removed), and sets the exit code.
import { main } from '../dist/cli/main.js';
import { processIo } from '../dist/cli/io.js';

const controller = new AbortController();
let interrupted = false;
process.on('SIGINT', () => {
  if (interrupted) process.exit(130);
  interrupted = true;
  controller.abort();
});
process.exitCode = await main(process.argv.slice(2), processIo(controller.signal));
if (interrupted) process.exitCode = 130;
