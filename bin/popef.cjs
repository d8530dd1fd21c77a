#!/usr/bin/env node
// Thin shim. The CLI is one bundled CommonJS file (dist/bin.cjs): Node 20
// starts it faster than ES modules, and faster from a CommonJS entry than
// from an ES one. dist/launch.cjs loads it with V8's code cache.
'use strict';
const { launch } = require('../dist/launch.cjs');
// validate checks a large repository on worker threads too: started now, they boot while the bundle loads (src/cli/early-workers.ts).
const early =
  process.argv[2] === 'validate'
    ? require('../dist/early-workers.cjs').startEarlyWorkers(process.argv.slice(3), require.resolve('../dist/validate-worker.cjs'))
    : undefined;
const { exports: cli } = launch(require.resolve('../dist/bin.cjs'));
cli.runProcess(early);
