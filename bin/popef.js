#!/usr/bin/env node
// Thin shim: the whole CLI is one bundled module, which starts faster than
// some sixty separate ES modules (see "build" in package.json).
import module from 'node:module';

// Node 22.1 and later keep V8's compiled code between runs (the largest part
// of start-up left); Node 20 has no such cache and skips this.
/** @type {{ enableCompileCache?: () => unknown }} */ (module).enableCompileCache?.();

const { runProcess } = await import('../dist/bin.mjs');
await runProcess();
