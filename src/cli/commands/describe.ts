import type { Command } from 'commander';
import { ExitCode } from '../exit-codes.js';
import type { CliIo } from '../io.js';
import type { Handler } from '../main.js';
import { exitCodesHelp } from './options.js';

interface DescribeFlags {
  readonly output?: string;
  readonly force?: boolean;
}

const HELP = `
Writes FILE.json beside FILE (for several files, beside the first): the
models' anchors and metadata as popef dump --json reports them, the size and
SHA-256 of each file, and the reader that read them
(schemas/popef-description.schema.json). Commit it beside an export that a
machine without the Poplar SDK cannot read: popef validate cross-checks the
config against it there (and refuses it when the file beside it has
changed), and popef config / scaffold accept it in place of the PopEF.

${exitCodesHelp('0 written, 2 usage, format or I/O errors (an existing output without --force).').trim()}`;

export function registerDescribe(program: Command, io: CliIo, run: (handler: Handler) => void): void {
  program
    .command('describe')
    .description('write a PopEF description (FILE.json) that validate, config and scaffold use in place of the file')
    .argument('<file...>', 'PopEF files forming one model set (the first names the description)')
    .option('-o, --output <file>', 'where to write the description (default: FILE.json beside the first file)')
    .option('-f, --force', 'replace the output file if it exists')
    .addHelpText('after', HELP)
    .action((files: string[], flags: DescribeFlags) => {
      run(async () => {
        const { describeFiles } = await import('./describe-run.js');
        const written = await describeFiles(files, flags, io);
        io.stdout(
          `wrote ${written.shown}: ${written.models} model${written.models === 1 ? '' : 's'}, ${written.files} file${written.files === 1 ? '' : 's'} described (${written.reader})\n`,
        );
        return ExitCode.Ok;
      });
    });
}
