import { Option, type Command } from 'commander';
import { resolve } from 'node:path';
import type { CliIo } from '../io.js';
import type { Handler } from '../main.js';
import type { DumpOptions } from './dump-run.js';
import { chosenFormat, deprecated, exitCodesHelp } from './options.js';

type DumpFlags = DumpOptions & { readonly format?: 'text' | 'json' | 'markdown'; readonly m?: boolean };

const HELP = `
Several files are read as one model set (for example executable.popef and
variables.popef); a file with several models shows each, by executable name.

User-provided anchors are what a caller feeds or receives at run time:
INPUT/OUTPUT anchors used by a program of the main phase of the program flow,
except the random seed (handle equal to the metadata's seed handle) and
anchors whose data is stored in the file as tensor data. The others (stored
weights, the seed, streams used only by load/save programs, UNKNOWN anchors)
are listed under their own headings with --all.

Without a view option, shows a metadata summary and the user-provided anchors.
${exitCodesHelp('0 ok, 2 unreadable or invalid files (and, with --verify, damaged payloads).')}`;

export function registerDump(program: Command, io: CliIo, run: (handler: Handler) => void): void {
  program
    .command('dump')
    .description("inspect PopEF open-layout files, like Graphcore's popef_dump, as text, JSON or Markdown")
    .argument('<file...>', 'PopEF open-layout files, read together as one model set')
    .option('--user-anchors', 'show only the user-provided anchors')
    .option('--metadata', 'show the metadata (target runtime, program flow, engine and device options)')
    // popef_dump's -m; -m is --model everywhere else in popef.
    .addOption(new Option('-m').hideHelp())
    .option('--all', 'show everything: metadata, all anchors by role, blobs, tensor/feed/opaque data, warnings')
    .option('--blobs', 'show the blob inventory as a table')
    .addOption(
      new Option(
        '--format <format>',
        'text; json: one document with everything --all shows (schemas/dump.schema.json); markdown: a model card',
      ).choices(['text', 'json', 'markdown']),
    )
    .option('--json', 'the same as --format json')
    .option('--markdown', 'the same as --format markdown')
    .option('--verify', 'read every payload and check checksums and sizes (exit 2 on damage)')
    .option('--no-color', 'disable colour (also honours NO_COLOR and FORCE_COLOR)')
    .addHelpText('after', HELP)
    .action((files: string[], flags: DumpFlags, command: Command) => {
      run(async () => {
        const { dumpFiles } = await import('./dump-run.js');
        const colour = command.optsWithGlobals<{ color?: boolean }>().color;
        if (flags.m === true) deprecated(io.stderr, 'dump -m', '--metadata', '-m means --model in every other command');
        const format = chosenFormat(flags, 'text');
        const options: DumpOptions = {
          ...flags,
          metadata: flags.metadata === true || flags.m === true,
          json: format === 'json',
          markdown: format === 'markdown',
        };
        return dumpFiles(
          files.map((f) => ({ path: resolve(io.cwd, f), name: f })),
          options,
          colour,
          io,
        );
      });
    });
}
