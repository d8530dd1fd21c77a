import type { Command } from 'commander';
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
          `wrote the ${name} example:\n${written.map((p) => `  ${p}\n`).join('')}next, in ${dir}: popef dump --user-anchors executable.popef\n`,
        );
        return ExitCode.Ok;
      });
    });
}
