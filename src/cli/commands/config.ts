import { Option, type Command } from 'commander';
import { join, resolve } from 'node:path';
import { ExitCode } from '../exit-codes.js';
import type { CliIo } from '../io.js';
import type { Handler } from '../main.js';
import { addConfigOptions, type ConfigFlags } from './config-flags.js';
import { deprecated, exitCodesHelp } from './options.js';

interface Flags extends ConfigFlags {
  readonly output?: string;
  readonly model?: string;
  readonly out?: string;
  readonly modelName?: string;
  readonly force?: boolean;
}

export function registerConfig(program: Command, io: CliIo, run: (handler: Handler) => void): void {
  const command = program
    .command('config')
    .description('generate config.pbtxt (and name_map.json) for the Triton Poplar backend from PopEF anchors')
    .argument('<file...>', 'PopEF open-layout files of one model set')
    .option(
      '-o, --output <dir>',
      "write DIR/MODEL/config.pbtxt and DIR/MODEL/1/name_map.json (Triton's layout; MODEL: -m, else the executable's name) instead of printing them",
    )
    .option('-m, --model <name>', "the config's name (default: none; Triton takes the directory name)")
    .option('-f, --force', 'replace existing files in --output')
    // Old spellings, kept working with a notice.
    .addOption(new Option('--out <dir>').hideHelp())
    .addOption(new Option('--model-name <name>').hideHelp());
  addConfigOptions(command).addHelpText(
    'after',
    `
Inputs and outputs are the user-provided anchors (see popef dump --help), in
anchor order. The first dimension of each anchor is the batch and is left out
of dims (per-replica anchors of a replicated model: the replica dimension
too), and max_batch_size = micro-batch x device iterations x replication
factor x gradient accumulation.
${exitCodesHelp('0 ok, 2 usage, input or I/O errors (an existing file without --force).')}`,
  );
  command.action((files: string[], flags: Flags) => {
    run(async () => {
      if (flags.out !== undefined) deprecated(io.stderr, 'config --out', '-o, --output');
      if (flags.modelName !== undefined) deprecated(io.stderr, 'config --model-name', '-m, --model');
      const output = flags.output ?? flags.out;
      const { generateFiles } = await import('./config-generate.js');
      const generated = await generateFiles(files, flags, flags.model ?? flags.modelName, io);
      if (output === undefined) {
        // Standard output stays one config.pbtxt (for > config.pbtxt); the name map, which --name may change, is shown beside it.
        io.stdout(generated.pbtxt);
        io.stderr(
          `popef: ${generated.batchExplanation}\n` +
            `popef: name_map.json (MODEL/1/name_map.json beside executable.popef; -o DIR writes both files in Triton's layout):\n${generated.nameMapText}`,
        );
        return ExitCode.Ok;
      }
      // Triton's layout: DIR/MODEL/config.pbtxt and DIR/MODEL/1/name_map.json, MODEL being -m or the executable's name.
      const { checkModelName } = await import('../../triton/scaffold.js');
      const model = flags.model ?? flags.modelName ?? generated.executable;
      checkModelName(model);
      const { writeFilesAtomically } = await import('../../triton/write-files.js');
      const dir = resolve(io.cwd, output, model);
      await writeFilesAtomically(
        [
          { path: join(dir, 'config.pbtxt'), content: generated.pbtxt },
          { path: join(dir, '1', 'name_map.json'), content: generated.nameMapText },
        ],
        { force: flags.force },
      );
      const shown = join(output, model);
      io.stdout(
        `wrote ${join(shown, 'config.pbtxt')} and ${join(shown, '1', 'name_map.json')}\n${generated.batchExplanation}\n` +
          `put the PopEF file in ${join(shown, '1')}/ as executable.popef (popef scaffold places it too)\n`,
      );
      return ExitCode.Ok;
    });
  });
}
