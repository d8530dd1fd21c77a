import type { Command } from 'commander';
import type { CliIo } from '../io.js';
import type { Handler } from '../main.js';
import { registerConfig } from './config.js';
import { registerConvert } from './convert.js';
import { registerDescribe } from './describe.js';
import { registerDiff } from './diff.js';
import { registerDoctor } from './doctor.js';
import { registerDump } from './dump.js';
import { registerExample } from './example.js';
import { registerPack } from './pack.js';
import { registerRun } from './run.js';
import { registerScaffold } from './scaffold.js';
import { registerServe } from './serve.js';
import { registerValidate } from './validate.js';
import { registerUnpack } from './unpack.js';
import { registerView } from './view.js';

type Registrar = (program: Command, io: CliIo, run: (handler: Handler) => void) => void;

/** Each command's names (convert registers two) and the function that adds them, in the order help lists them. */
const COMMANDS: readonly (readonly [names: readonly string[], register: Registrar])[] = [
  [['dump'], registerDump],
  [['diff'], registerDiff],
  [['config'], registerConfig],
  [['scaffold'], registerScaffold],
  [['validate'], registerValidate],
  [['describe'], registerDescribe],
  [['run'], registerRun],
  [['serve'], registerServe],
  [['pack'], registerPack],
  [['unpack'], registerUnpack],
  [['import', 'export'], registerConvert],
  [['doctor'], registerDoctor],
  [['view'], registerView],
  [['example'], registerExample],
];

/**
 * Adds the command `argv` names, or every command when it names none that
 * exists (`popef --help`, `popef help dump`, a typo, which commander then
 * answers with the full list). Building the options of every command
 * to run one is a measurable part of start-up. Each command's work is
 * imported lazily by its handler.
 */
export function register(program: Command, io: CliIo, run: (handler: Handler) => void, argv: readonly string[] = []): void {
  // The program's own options take no values, so the first word that is not an option is the command.
  const word = argv.find((a) => !a.startsWith('-'));
  const chosen = COMMANDS.find(([names]) => word !== undefined && names.includes(word));
  for (const [, add] of chosen === undefined ? COMMANDS : [chosen]) add(program, io, run);
}
