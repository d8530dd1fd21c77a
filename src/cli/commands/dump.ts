import type { Command } from 'commander';
import { resolve } from 'node:path';
import type { CliIo } from '../io.js';
import type { Handler } from '../main.js';
import type { DumpOptions } from './dump-run.js';

type DumpFlags = DumpOptions;

const HELP = `
Several files are read as one model set (for example executable.popef and
variables.popef); a file with several models shows each, by executable name.

User-provided anchors are what a caller feeds or receives at run time:
INPUT/OUTPUT anchors used by a program of the main phase of the program flow,
except the random seed (handle equal to the metadata's seed handle) and
anchors whose data is stored in the file as tensor data. The others (stored
weights, the seed, streams used only by load/save programs, UNKNOWN anchors)
are listed under their own headings with --all.

Without a view option, shows a metadata summary and the user-provided anchors.`;

export function registerDump(program: Command, io: CliIo, run: (handler: Handler) => void): void {
  program
    .command('dump')
    .description("inspect PopEF open-layout files, like Graphcore's popef_dump, as text, JSON or Markdown")
    .argument('<file...>', 'PopEF open-layout files, read together as one model set')
    .option('--user-anchors', 'show only the user-provided anchors')
    .option('-m, --metadata', 'show the metadata (target runtime, program flow, engine and device options)')
    .option('--all', 'show everything: metadata, all anchors by role, blobs, tensor/feed/opaque data, warnings')
    .option('--blobs', 'show the blob inventory as a table')
    .option('--json', 'print one JSON document with everything --all shows (schema: schemas/dump.schema.json)')
    .option('--markdown', 'print a Markdown model card for a pull-request comment')
    .option('--verify', 'read every payload and check checksums and sizes (exit 2 on damage)')
    .option('--no-color', 'disable colour (also honours NO_COLOR and FORCE_COLOR)')
    .addHelpText('after', HELP)
    .action((files: string[], flags: DumpFlags, command: Command) => {
      run(async () => {
        const { dumpFiles } = await import('./dump-run.js');
        const colour = command.optsWithGlobals<{ color?: boolean }>().color;
        return dumpFiles(files.map((f) => ({ path: resolve(io.cwd, f), name: f })), flags, colour, io);
      });
    });
}
