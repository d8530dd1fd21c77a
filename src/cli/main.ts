import { Command, CommanderError, Option } from 'commander';
import { ErrorCode, PopefError, isPopefError } from '../errors.js';
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
  const globals = argv.slice(
    0,
    Math.max(
      0,
      argv.findIndex((a) => !a.startsWith('-')),
    ),
  );
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
    .exitOverride()
    // Commander's own usage errors are not printed where they arise: they reach the funnel below as CommanderErrors
    // and are reported there like every other error (prefix, code, hint, exit 2).
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr, outputError: () => undefined })
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
  try {
    if (asked !== undefined && findCommand(program, asked) === undefined) {
      throw new PopefError(ErrorCode.Usage, `unknown command '${asked}'; the commands: ${program.commands.map((c) => c.name()).join(', ')}`, {
        suggestion: "run 'popef --help' for what each command does",
      });
    }
    await program.parseAsync([...argv], { from: 'user' });
    if (pending === undefined) return ExitCode.Ok;
    return await pending();
  } catch (error) {
    return report(error instanceof CommanderError ? fromCommander(error, program, argv) : error, io);
  }
}

function findCommand(program: Command, name: string): Command | undefined {
  return program.commands.find((c) => c.name() === name || c.aliases().includes(name));
}

/**
 * A CommanderError as what the funnel reports: nothing for help and
 * --version (exit 0) or for the help shown when no command is given, and a
 * usage error (E_USAGE, exit 2) with a hint naming the command's --help for
 * everything commander refuses (unknown options and commands, missing
 * arguments and required options, values its parsers reject).
 */
function fromCommander(error: CommanderError, program: Command, argv: readonly string[]): CommanderError | PopefError {
  if (error.exitCode === 0 || error.code === 'commander.help' || error.code === 'commander.helpDisplayed' || error.code === 'commander.version')
    return error;
  const named = argv.find((a) => !a.startsWith('-'));
  const command = named === undefined ? undefined : findCommand(program, named);
  const help = command === undefined ? 'popef --help' : `popef ${command.name()} --help`;
  // commander puts its "(Did you mean --format?)" on a line of its own: an error is one line here (README, exit codes).
  let message = error.message.replace(/^error: /, '').replace(/\s*\n\s*/g, ' ');
  // commander checks required options before unknown ones: `--repo x` for `--repository x` would be reported as the
  // required option missing, with no word of the option typed. The unknown option is the cause: name it first.
  const unknown =
    error.code === 'commander.missingMandatoryOptionValue' && command !== undefined ? unknownLongOption(command, program, argv) : undefined;
  if (unknown !== undefined) message = `unknown option '${unknown}', so ${message}`;
  return new PopefError(ErrorCode.Usage, message, { suggestion: `run '${help}' for usage`, cause: error });
}

/** The first `--name` on the command line that neither the command nor the program takes. */
function unknownLongOption(command: Command, program: Command, argv: readonly string[]): string | undefined {
  const known = new Set([...command.options, ...program.options].map((o) => o.long).filter((l): l is string => l !== undefined));
  known.add('--help');
  for (const arg of argv) {
    if (arg === '--') break;
    if (!arg.startsWith('--')) continue;
    const name = arg.split('=')[0] ?? arg;
    if (!known.has(name)) return name;
  }
  return undefined;
}

function report(error: unknown, io: CliIo): number {
  if (error instanceof CommanderError) {
    // Help and --version exit through here with code 0; help shown for a missing command exits 2, as a usage error.
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
