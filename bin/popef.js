#!/usr/bin/env node
// Thin shim: the whole CLI is one bundled module, which starts faster than
// some sixty separate ES modules (see "build" in package.json).
import { runProcess } from '../dist/bin.mjs';

await runProcess();
