import type { Command } from 'commander';
import type { CliIo } from '../io.js';
import type { Handler } from '../main.js';
import { parseIntOption } from './options.js';

export interface ViewFlags {
  readonly port?: number;
  readonly open?: boolean;
  readonly export?: string;
  readonly force?: boolean;
}

const HELP = `
Serves the viewer page on 127.0.0.1 (a free port unless --port), with the
given PopEF files open in it; the address is printed. The page reads the
files it is given with Range requests, headers and metadata first, as
popef dump URL does; nothing is sent anywhere else. --open also opens it in
the desktop's browser.

--export DIR writes the page alone (DIR/index.html, one self-contained
file: it works from file:// and on any static host); open files in it with
its file picker or by dropping them on it.

Exit codes: 0 stopped with Ctrl-C or written, 2 usage or file errors.`;

export function registerView(program: Command, io: CliIo, run: (handler: Handler) => void): void {
  program
    .command('view')
    .description('open PopEF files in a web page: summary, anchors, metadata, blobs, config, validation, diff')
    .argument('[files...]', 'PopEF files to open in the page, read as one model set')
    .option('--port <n>', 'the port to listen on (default: a free one)', parseIntOption(0, 65535))
    .option('--open', 'open the page in the desktop browser (xdg-open, open or start)')
    .option('--export <dir>', 'write the page to DIR/index.html instead of serving it')
    .option('-f, --force', 'with --export, replace an index.html that popef view wrote')
    .addHelpText('after', HELP)
    .action((files: string[], flags: ViewFlags) => {
      run(async () => {
        const { exportPage, servePage } = await import('./view-command.js');
        return flags.export === undefined ? await servePage(files, flags, io) : await exportPage(files, flags.export, flags, io);
      });
    });
}
