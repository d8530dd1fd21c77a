import type { Command } from 'commander';
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { ExitCode } from '../exit-codes.js';
import type { CliIo } from '../io.js';
import type { Handler } from '../main.js';
import { positiveSecondsMs } from './options.js';

interface Flags {
  readonly output: string;
  readonly force?: boolean;
  readonly compress?: boolean;
  readonly timeout: string;
}

const HELP = `
Both need the Poplar SDK: the conversion runs in the IPU bridge
(src/run/bridge/ipu_bridge.py) with POPEF_PYTHON (default python3), in a
shell where the SDK is enabled, and uses the SDK's own popef.Reader and
popef.Writer. Payloads are streamed in chunks. After an import, every other
command works on the file anywhere, without the SDK.

Exit codes: 0 written, 2 usage, input or I/O errors, the SDK missing (see
popef doctor) or failing; nothing is left behind on error; 128+n when the
bridge dies by signal n.`;

async function convert(kind: 'import' | 'export', files: string[], flags: Flags, io: CliIo): Promise<number> {
  const { ipuPlugin } = await import('../../run/load-plugin.js');
  const { exportToSdk, importSdkFiles } = await import('../../run/sdk-convert.js');
  const { progressBar } = await import('../../present/progress.js');
  const { VERSION } = await import('../../version.js');
  const timeout = positiveSecondsMs(flags.timeout, '--timeout');
  const bridge = ipuPlugin({ cwd: io.cwd, env: io.env, signal: io.signal, requestTimeoutMs: timeout, host: `popef-toolkit ${VERSION}` });
  const paths = files.map((f) => resolve(io.cwd, f));
  const out = resolve(io.cwd, flags.output);
  let total = 0;
  for (const p of paths) total += sizeOrZero(p);
  const bar = progressBar(io, kind === 'import' ? 'importing' : 'exporting', total);
  try {
    const options = {
      force: flags.force,
      compress: flags.compress,
      signal: io.signal,
      timeoutMs: timeout,
      onProgress: (bytes: number) => bar.update(bytes, total),
    };
    if (kind === 'import') {
      const r = await importSdkFiles(bridge, paths, out, options);
      bar.finish();
      for (const w of r.warnings) io.stderr(`popef: warning: ${w}\n`);
      io.stdout(`wrote ${flags.output}: ${r.blobs} blob(s), ${r.bytes} payload bytes, in the PopEF open layout\n`);
    } else {
      const r = await exportToSdk(bridge, paths, out, options);
      bar.finish();
      for (const s of r.skipped) io.stderr(`popef: warning: the SDK has no place for the ${s}; it was left out\n`);
      for (const w of r.warnings) io.stderr(`popef: warning: ${w}\n`);
      io.stdout(`wrote ${flags.output}: ${r.blobs} blob(s), ${r.bytes} payload bytes, with the SDK's popef.Writer\n`);
    }
    return ExitCode.Ok;
  } catch (error) {
    bar.stop();
    throw error;
  } finally {
    await bridge.dispose();
  }
}

export function registerConvert(program: Command, io: CliIo, run: (handler: Handler) => void): void {
  for (const kind of ['import', 'export'] as const) {
    program
      .command(kind)
      .description(
        kind === 'import'
          ? 'convert files written by the Poplar SDK to the PopEF open layout (needs the SDK)'
          : 'write an open-layout model set as a PopEF file of the Poplar SDK (needs the SDK)',
      )
      .argument('<file...>', kind === 'import' ? 'SDK-written PopEF files of one model set' : 'PopEF open-layout files of one model set')
      .requiredOption('-o, --output <file>', 'the file to write')
      .option('-f, --force', 'replace the output file if it exists')
      .option('--compress', kind === 'import' ? 'store executables zlib-compressed' : 'ask the SDK to compress executables')
      .option('--timeout <seconds>', 'how long the bridge may take for each step', '300')
      .addHelpText('after', HELP)
      .action((files: string[], flags: Flags) => {
        run(() => convert(kind, files, flags, io));
      });
  }
}

/** For the progress bar only: a file that cannot be read is reported by the conversion itself. */
function sizeOrZero(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}
