import { Command, CommanderError, Option } from 'commander';
import { isPopefError } from '../errors.js';
import { EXIT_CODES_HELP, ExitCode, exitCodeOf } from './exit-codes.js';
import type { CliIo } from './io.js';
import { reportError } from './report-error.js';
import { VERSION } from '../version.js';

/** A command's handler: does the work, writes through io, returns the exit code. */
export type Handler = () => Promise<number>;

/**
 * Builds the program and runs it. This is the ONE error funnel: every error
 * of every command ends here and becomes one message and one exit code.
 * Known errors print one line (plus a hint); anything else is a bug and
 * says so, with the stack only when POPEF_DEBUG is set.
 */
export async function main(argv: readonly string[], given: CliIo): Promise<number> {
  // The global --no-color (before the command name) holds for every command: it becomes NO_COLOR, which all of them honour.
  const globals = argv.slice(0, Math.max(0, argv.findIndex((a) => !a.startsWith('-'))));
  const io: CliIo = globals.includes('--no-color') ? { ...given, env: { ...given.env, NO_COLOR: '1' } } : given;
  let pending: Handler | undefined;
  const run = (handler: Handler): void => {
    pending = handler;
  };
  const program = new Command('popef')
    .description('Inspect, pack and validate Graphcore PopEF files (open layout) and their Triton model repositories.')
    .version(VERSION, '-V, --version')
    .addOption(new Option('--no-color', 'disable colour (also honours NO_COLOR and FORCE_COLOR)'))
    // Options after a command name belong to that command: scaffold's --version
    // is a model version, not a request for popef's own version.
    .enablePositionalOptions()
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride()
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr })
    // Defaults in one style: "(default: 300)", as the hand-written ones say it, not JSON-quoted.
    .configureHelp({
      optionDescription: (option) => {
        const extra: string[] = [];
        if (option.argChoices !== undefined) extra.push(`choices: ${option.argChoices.join(', ')}`);
        if (option.defaultValue !== undefined && !(option.negate && option.defaultValue === true)) {
          extra.push(`default: ${option.defaultValueDescription ?? String(option.defaultValue as string | number | boolean)}`);
        }
        return extra.length === 0 ? option.description : `${option.description} (${extra.join('; ')})`;
      },
    })
    .addHelpText('after', EXIT_CODES_HELP);
  const commands = await import('./commands/index.js');
  commands.register(program, io, run, argv);
  const asked = argv[0] === 'help' ? argv[1] : undefined;
  if (asked !== undefined && !program.commands.some((c) => c.name() === asked || c.aliases().includes(asked))) {
    io.stderr(`popef: error: unknown command '${asked}'; the commands: ${program.commands.map((c) => c.name()).join(', ')}\n`);
    return ExitCode.Error;
  }
  try {
    await program.parseAsync([...argv], { from: 'user' });
    if (pending === undefined) return ExitCode.Ok;
    return await pending();
  } catch (error) {
    return report(error, io);
  }
}

function report(error: unknown, io: CliIo): number {
  if (error instanceof CommanderError) {
    // Help and version exit through here with code 0; usage errors were already printed.
    return error.exitCode === 0 ? ExitCode.Ok : ExitCode.Error;
  }
  if (isPopefError(error)) {
    reportError(error, io);
    return exitCodeOf(error);
  }
  const e = error instanceof Error ? error : new Error(String(error));
  io.stderr(`popef: internal error: ${e.message}\n`);
  io.stderr('  this is a bug in popef-toolkit: please report it with the command you ran\n');
  if (io.env.POPEF_DEBUG !== undefined) io.stderr(`${e.stack ?? ''}\n`);
  return ExitCode.Internal;
}
