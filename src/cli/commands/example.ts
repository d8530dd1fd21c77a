import type { Command } from 'commander';
import { dirname } from 'node:path';
import { ExitCode } from '../exit-codes.js';
import type { CliIo } from '../io.js';
import type { Handler } from '../main.js';
import { exitCodesHelp } from './options.js';

interface ExampleFlags {
  readonly force?: boolean;
}

const HELP = `
Examples:
  mnist   the README's walkthrough: executable.popef (the seed's MNIST
          model, trained on real handwritten digits, with its ONNX graph
          for the cpu plugin), img/0.png ... img/9.png (ten digits it did
          not see in training) and mnist_client.py (the walkthrough's
          tritonclient program; it needs Python with tritonclient[grpc]
          and pillow) with requirements.txt (those two, pinned)

Then, in DIR: popef dump --user-anchors executable.popef, and the rest of
the walkthrough (README.md, "The seed's workflow").

${exitCodesHelp('0 written, 2 usage or I/O errors (a file of the example already in DIR, without --force).').trim()}`;

/**
 * The written files, one per line, except that a run of more than three in
 * one directory (the ten images) is one line, first and last, with the
 * count: what the user needs is where they went.
 */
function writtenLines(paths: readonly string[]): string[] {
  const lines: string[] = [];
  for (let i = 0; i < paths.length;) {
    const dir = dirname(paths[i] ?? '');
    let end = i + 1;
    while (end < paths.length && dirname(paths[end] ?? '') === dir) end++;
    const run = paths.slice(i, end);
    if (run.length > 3) lines.push(`${run[0] ?? ''} ... ${run.at(-1) ?? ''} (${String(run.length)} files)`);
    else lines.push(...run);
    i = end;
  }
  return lines;
}

export function registerExample(program: Command, io: CliIo, run: (handler: Handler) => void): void {
  program
    .command('example')
    .description("write an example's files (the walkthrough's model, images and client) into a directory")
    .argument('<name>', 'the example: mnist')
    .argument('<dir>', 'where to write it (made if missing)')
    .option('-f, --force', 'replace files of the example that are already in DIR')
    .addHelpText('after', HELP)
    .action((name: string, dir: string, flags: ExampleFlags) => {
      run(async () => {
        const { writeExample } = await import('./example-run.js');
        const written = await writeExample(name, dir, flags.force === true, io);
        io.stdout(
          `wrote the ${name} example:\n${writtenLines(written)
            .map((line) => `  ${line}\n`)
            .join('')}next, in ${dir}: popef dump --user-anchors executable.popef\n`,
        );
        return ExitCode.Ok;
      });
    });
}
