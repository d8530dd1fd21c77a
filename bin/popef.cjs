#!/usr/bin/env node
// Thin shim. The CLI is one bundled CommonJS file (dist/bin.cjs): Node 20
// starts it faster than ES modules, and faster from a CommonJS entry than
// from an ES one. dist/launch.cjs loads it with V8's code cache.
'use strict';
const { launch } = require('../dist/launch.cjs');
const { exports: cli } = launch(require.resolve('../dist/bin.cjs'));
cli.runProcess();
