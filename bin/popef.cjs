#!/usr/bin/env node
// Thin shim. The CLI is one bundled CommonJS file (dist/bin.cjs): Node 20
// starts it faster than ES modules, and faster from a CommonJS entry than
// from an ES one. dist/launch.cjs loads it with V8's code cache.
'use strict';
// validate checks a large repository on worker threads too: started first, before even the launcher loads, they boot
// while the bundle does (src/cli/early-workers.ts; a worker's boot is the longest wait of a run of 1,000 models).
const early =
  process.argv[2] === 'validate'
    ? require('../dist/early-workers.cjs').startEarlyWorkers(process.argv.slice(3), require.resolve('../dist/validate-worker.cjs'))
    : undefined;
const { launch } = require('../dist/launch.cjs');
const { exports: cli } = launch(require.resolve('../dist/bin.cjs'));
// Compiled under the flags it was cached with: from here on the early worker may change them (src/cli/turbofan-handoff.ts).
early?.bundleLoaded();
cli.runProcess(early);
