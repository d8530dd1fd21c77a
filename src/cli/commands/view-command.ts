import { spawn } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { basename, join, resolve } from 'node:path';
import { ErrorCode, PopefError, ioError } from '../../errors.js';
import { PopefFile } from '../../format/reader.js';
import { FileSource } from '../../io/file-source.js';
import { packageRoot } from '../../package-root.js';
import { printable } from '../../present/printable.js';
import { writeFilesAtomically } from '../../triton/write-files.js';
import type { CliIo } from '../io.js';
import type { ViewFlags } from './view.js';

/**
 * `popef view`: the viewer page (built by scripts/build-view.mjs into
 * dist/view/index.html), served on loopback with the given files beside it,
 * or written to a directory. The server answers three things only: the
 * page, each given file (with Range requests, which the page's reader
 * makes), and 404 for anything else.
 */

/** The page's list of files to open, empty as built (src/view/page.html). */
const PRELOAD = '<script id="popef-preload" type="application/json">[]</script>';

const GENERATOR = '<meta name="generator" content="popef-toolkit view">';

async function pageTemplate(): Promise<string> {
  const path = join(packageRoot(), 'dist', 'view', 'index.html');
  const page = await readFile(path, 'utf8').catch((error: unknown) => {
    throw new PopefError(ErrorCode.Io, `the viewer page is missing (${(error as Error).message})`, {
      file: path,
      suggestion: 'build it with npm run build, or reinstall popef-toolkit',
    });
  });
  return page;
}

/** The page with a list of files to open; `<` is escaped so that no file name can close the script element. */
function withPreload(page: string, files: readonly { url: string; name: string }[]): string {
  return page.replace(PRELOAD, () => PRELOAD.replace('[]', JSON.stringify(files).replace(/</g, '\\u003c')));
}

interface Served {
  readonly path: string;
  readonly name: string;
  readonly size: number;
}

/** Each file is opened once as a PopEF file first: a file that is not one is an error now, not in the page. */
async function checkFiles(files: readonly string[], io: CliIo): Promise<Served[]> {
  const served: Served[] = [];
  for (const f of files) {
    const path = resolve(io.cwd, f);
    const file = await PopefFile.open(await FileSource.open(path, f));
    await file.close();
    served.push({ path, name: basename(f), size: file.size });
  }
  return served;
}

function sendFile(req: IncomingMessage, res: ServerResponse, file: Served): void {
  const range = /^bytes=(\d*)-(\d*)$/.exec(req.headers.range ?? '');
  let start = 0;
  let end = file.size - 1;
  if (range !== null) {
    const [, from = '', to = ''] = range;
    if (from === '') {
      start = Math.max(0, file.size - Number(to));
    } else {
      start = Number(from);
      if (to !== '') end = Math.min(end, Number(to));
    }
    if (start > end || start >= file.size) {
      res.writeHead(416, { 'Content-Range': `bytes */${file.size}` }).end();
      return;
    }
  }
  const headers = {
    'Content-Type': 'application/octet-stream',
    'Accept-Ranges': 'bytes',
    'Content-Length': end - start + 1,
    'Cache-Control': 'no-store',
  };
  if (range === null) res.writeHead(200, headers);
  else res.writeHead(206, { ...headers, 'Content-Range': `bytes ${start}-${end}/${file.size}` });
  if (req.method === 'HEAD' || file.size === 0) {
    res.end();
    return;
  }
  createReadStream(file.path, { start, end })
    .on('error', () => res.destroy())
    .pipe(res);
}

function openInBrowser(url: string, io: CliIo): void {
  const command = process.platform === 'darwin' ? 'open' : process.platform === 'win32' ? 'explorer' : 'xdg-open';
  const child = spawn(command, [url], { stdio: 'ignore', detached: true });
  child.on('error', (error) => io.stderr(`popef view: cannot open a browser (${command}: ${error.message}); open ${url} yourself\n`));
  child.unref();
}

export async function servePage(files: readonly string[], flags: ViewFlags, io: CliIo): Promise<number> {
  const served = await checkFiles(files, io);
  const page = withPreload(
    await pageTemplate(),
    served.map((f, i) => ({ url: `files/${i}/${encodeURIComponent(f.name)}`, name: f.name })),
  );
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { Allow: 'GET, HEAD' }).end();
      return;
    }
    if (path === '/' || path === '/index.html') {
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' });
      res.end(req.method === 'HEAD' ? undefined : page);
      return;
    }
    const match = /^\/files\/(\d+)\//.exec(path);
    const file = match === null ? undefined : served[Number(match[1])];
    if (file === undefined) {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found\n');
      return;
    }
    sendFile(req, res, file);
  });
  await new Promise<void>((done, fail) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      fail(
        new PopefError(
          ErrorCode.Io,
          `cannot listen on 127.0.0.1:${flags.port ?? 0}: ${error.code === 'EADDRINUSE' ? 'the port is in use' : error.message}`,
          {
            suggestion: 'give another --port, or leave it out for a free one',
          },
        ),
      ),
    );
    server.listen(flags.port ?? 0, '127.0.0.1', () => done());
  });
  const address = server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : (flags.port ?? 0)}/`;
  io.stdout(`${url}\n`);
  io.stderr(
    `popef view: ${served.length === 0 ? 'no files given: open them in the page' : served.map((f) => printable(f.name)).join(' + ')}; Ctrl-C stops\n`,
  );
  if (flags.open === true) openInBrowser(url, io);
  await new Promise<void>((done) => {
    if (io.signal.aborted) done();
    else io.signal.addEventListener('abort', () => done(), { once: true });
  });
  server.closeAllConnections();
  await new Promise<void>((done) => server.close(() => done()));
  io.signalIsNormalStop?.();
  return 0;
}

export async function exportPage(files: readonly string[], dir: string, flags: ViewFlags, io: CliIo): Promise<number> {
  if (files.length > 0) {
    throw new PopefError(ErrorCode.InvalidInput, '--export writes the page alone; it does not take files', {
      suggestion: 'open the files in the exported page with its file picker, or run popef view FILE... to serve them',
    });
  }
  const target = resolve(io.cwd, dir, 'index.html');
  const existing = await readFile(target, 'utf8').catch((error: unknown) => {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw ioError(error, target, 'read');
  });
  if (existing !== undefined && flags.force === true && !existing.includes(GENERATOR)) {
    throw new PopefError(ErrorCode.Exists, 'index.html exists and was not written by popef view; --force replaces only a page popef view wrote', {
      file: join(dir, 'index.html'),
      suggestion: 'choose another directory, or move that file away',
    });
  }
  await writeFilesAtomically([{ path: target, content: await pageTemplate() }], { force: flags.force === true });
  io.stdout(`${join(dir, 'index.html')}\n`);
  return 0;
}
