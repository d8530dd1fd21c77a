import type { Command } from 'commander';
import { resolve } from 'node:path';
import { ExitCode } from '../exit-codes.js';
import { printable } from '../../present/printable.js';
import type { CliIo } from '../io.js';
import type { Handler } from '../main.js';
import { exitCodesHelp } from './options.js';

interface UnpackFlags {
  readonly output: string;
  readonly force?: boolean;
}

export function registerUnpack(program: Command, io: CliIo, run: (handler: Handler) => void): void {
  program
    .command('unpack')
    .description('write DIR/manifest.json and one payload file per blob, verifying every checksum (exit 2 on damage)')
    .argument('<file>', 'a PopEF open-layout file')
    .requiredOption('-o, --output <dir>', 'directory to create')
    .option('-f, --force', 'replace the directory if an earlier unpack wrote it (never one that holds the input)')
    .addHelpText(
      'after',
      exitCodesHelp('0 written, 2 unreadable or damaged input (checksums are verified), usage or I/O errors; nothing is left behind on error.'),
    )
    .action((file: string, flags: UnpackFlags) => {
      run(async () => {
        const { unpackFile } = await import('../../manifest/unpack.js');
        const result = await unpackFile(resolve(io.cwd, file), resolve(io.cwd, flags.output), {
          force: flags.force,
          signal: io.signal,
          workingDirectory: io.cwd,
        });
        io.stdout(`wrote ${flags.output}/: manifest.json and ${result.files.length - 1} payload file(s); every checksum verified\n`);
        for (const w of result.newerMinor) {
          io.stderr(
            `popef: warning: ${printable(`${w.file}: offset ${w.offset}: ${w.message}`, true)}\n  they are not kept: the manifest holds the fields this version knows, and popef pack writes the blob without the newer ones\n`,
          );
        }
        const problem = result.modelProblem;
        if (problem !== undefined) {
          io.stderr(
            `popef: warning: ${printable(problem.describe(), true)} [${problem.code}]\n  the file breaks a model rule (FORMAT.md section 8): popef dump refuses it, and popef pack will refuse this manifest until it is fixed${problem.suggestion === undefined ? '' : `: ${printable(problem.suggestion, true)}`}\n`,
          );
        }
        return ExitCode.Ok;
      });
    });
}
