import { Option, type Command } from 'commander';
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { ExitCode } from '../exit-codes.js';
import type { CliIo } from '../io.js';
import type { Handler } from '../main.js';
import { exitCodesHelp, parseIntOption } from './options.js';

interface PackFlags {
  readonly output: string;
  readonly force?: boolean;
  readonly compressionLevel?: number;
}

export function registerPack(program: Command, io: CliIo, run: (handler: Handler) => void): void {
  program
    .command('pack')
    .description('write a PopEF open-layout file from a JSON manifest and payload files')
    .argument('<manifest>', 'manifest.json (schema: schemas/manifest.schema.json); payload paths are relative to it')
    .requiredOption('-o, --output <file>', 'the .popef file to write')
    .option('-f, --force', 'replace the output file if it exists')
    .addOption(new Option('--compression-level <n>', 'zlib level for executables marked "compress" (0-9)').argParser(parseIntOption(0, 9)))
    .addHelpText(
      'after',
      exitCodesHelp('0 written, 2 usage, manifest, payload or I/O errors (an existing output without --force); nothing is left behind on error.'),
    )
    .action((manifest: string, flags: PackFlags) => {
      run(async () => {
        const { packManifest } = await import('../../manifest/pack.js');
        const out = resolve(io.cwd, flags.output);
        let blobs = 0;
        await packManifest(resolve(io.cwd, manifest), out, {
          force: flags.force,
          compressionLevel: flags.compressionLevel,
          signal: io.signal,
          onBlob: () => {
            blobs += 1;
          },
        });
        const { size } = statSync(out);
        io.stdout(`wrote ${flags.output}: ${blobs} manifest entr${blobs === 1 ? 'y' : 'ies'}, ${size} bytes\n`);
        return ExitCode.Ok;
      });
    });
}
