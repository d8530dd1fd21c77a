import { Option, type Command } from 'commander';
import type { CliIo } from '../io.js';
import type { Handler } from '../main.js';
import { chosenFormat } from './options.js';

interface Flags {
  readonly format?: 'text' | 'json' | 'markdown';
  readonly json?: boolean;
  readonly markdown?: boolean;
  readonly ignore?: string[];
  readonly color?: boolean;
}

const HELP = `
Compares two model sets: anchors added, removed and changed (dtype, shape,
handle, programs, isPerReplica), metadata fields, and the blob inventory
(added, removed, resized, checksum changed). Executables and other payloads
are compared by their stored checksums, never decompressed or read. With one
model on each side the two are compared whatever their executable names.

--ignore FIELD drops expected differences: a field (crc32, handle,
engineOptions, ...), a scope.field (POPLAR_EXECUTABLE.crc32, anchor.handle,
metadata.deviceIterations) or a whole scope (anchor, metadata, OPAQUE).

Files may be http(s):// URLs, read with Range requests (headers and metadata
only). Exit codes: 0 identical, 1 different, 2 errors.`;

export function registerDiff(program: Command, io: CliIo, run: (handler: Handler) => void): void {
  program
    .command('diff')
    .description('compare two PopEF model sets: popef diff A B, or popef diff A1 A2 -- B1 B2 (exit 1 when they differ)')
    .argument('<files...>', 'the two sides: A B, or the files of A, then --, then the files of B')
    .addOption(
      new Option('--format <format>', 'text; json: one document (schemas/diff.schema.json); markdown: a table for a pull-request comment').choices([
        'text',
        'json',
        'markdown',
      ]),
    )
    .option('--json', 'the same as --format json')
    .option('--markdown', 'the same as --format markdown')
    .option('--ignore <field>', 'leave out expected differences (repeatable)', (v: string, prev?: string[]) => [...(prev ?? []), v])
    .option('--no-color', 'disable colour (also honours NO_COLOR and FORCE_COLOR)')
    .addHelpText('after', HELP)
    .action((files: string[], flags: Flags, command: Command) => {
      run(async () => {
        // Commander drops "--" from the operands; find where it stood in what the user typed
        // (commander keeps the arguments it parsed as rawArgs, which its typings leave out).
        const raw = (command.parent as { rawArgs?: string[] } | null)?.rawArgs ?? [];
        const start = raw.indexOf('diff');
        const separator = raw.indexOf('--', start);
        const { diffCommand } = await import('./diff-run.js');
        const format = chosenFormat(flags, 'text');
        return diffCommand(
          files,
          separator === -1 ? undefined : raw.slice(separator + 1).length,
          { ...flags, json: format === 'json', markdown: format === 'markdown' },
          io,
        );
      });
    });
}
