import type { Command } from 'commander';
import type { CliIo } from '../io.js';
import type { Handler } from '../main.js';
import { registerConfig } from './config.js';
import { registerConvert } from './convert.js';
import { registerDiff } from './diff.js';
import { registerDoctor } from './doctor.js';
import { registerDump } from './dump.js';
import { registerPack } from './pack.js';
import { registerRun } from './run.js';
import { registerScaffold } from './scaffold.js';
import { registerServe } from './serve.js';
import { registerValidate } from './validate.js';
import { registerUnpack } from './unpack.js';

/** Adds every command to the program. Each command's work is imported lazily by its handler. */
export function register(program: Command, io: CliIo, run: (handler: Handler) => void): void {
  registerDump(program, io, run);
  registerDiff(program, io, run);
  registerConfig(program, io, run);
  registerScaffold(program, io, run);
  registerValidate(program, io, run);
  registerRun(program, io, run);
  registerServe(program, io, run);
  registerPack(program, io, run);
  registerUnpack(program, io, run);
  registerConvert(program, io, run);
  registerDoctor(program, io, run);
}
