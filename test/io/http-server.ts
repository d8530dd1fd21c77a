import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { createGzip } from 'node:zlib';

/**
 * A local HTTP server on 127.0.0.1 for the remote-read tests and benchmark:
 * serves byte buffers by path with Range support, and misbehaves on request
 * (no ranges, short bodies, silence, redirect loops; a 206 whose body is
 * far larger than its range, a gzip bomb, a body that stalls after the
 * headers or is cut by closing the connection). Counts bytes sent.
 */
export type Behaviour = 'ranges' | 'no-ranges' | 'short' | 'silent' | 'redirect-loop' | 'oversized' | 'gzip-bomb' | 'stall-body' | 'cut-body';

export interface TestServer {
  readonly base: string;
  bytesSent: number;
  requests: number;
  close(): Promise<void>;
}

export interface ServerOptions {
  /** Answer every request this much later (a slow server). */
  readonly delayMs?: number;
  /** Path -> Location: answered 302 (relative to nothing: give whole URLs for other hosts). */
  readonly redirects?: ReadonlyMap<string, string>;
}

export async function startServer(
  files: ReadonlyMap<string, Uint8Array | { size: number; read: (start: number, end: number) => Uint8Array }>,
  behaviour: Behaviour = 'ranges',
  options: ServerOptions = {},
): Promise<TestServer> {
  const state = { bytesSent: 0, requests: 0 };
  const sockets = new Set<Socket>();
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (options.delayMs !== undefined) {
      setTimeout(() => answer(req, res), options.delayMs);
      return;
    }
    answer(req, res);
  });
  const answer = (req: IncomingMessage, res: ServerResponse): void => {
    state.requests += 1;
    const path = req.url ?? '/';
    const redirect = options.redirects?.get(path);
    if (redirect !== undefined) {
      res.writeHead(302, { Location: redirect }).end();
      return;
    }
    if (behaviour === 'silent') return; // never answers
    if (behaviour === 'redirect-loop') {
      res.writeHead(302, { Location: path === '/a' ? '/b' : '/a' }).end();
      return;
    }
    const file = files.get(path);
    if (file === undefined) {
      res.writeHead(404).end();
      return;
    }
    const size = file instanceof Uint8Array ? file.byteLength : file.size;
    const read = (start: number, end: number): Uint8Array => (file instanceof Uint8Array ? file.subarray(start, end) : file.read(start, end));
    const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
    if (behaviour === 'no-ranges' || m === null) {
      res.writeHead(200, { 'Content-Length': size });
      res.end();
      return;
    }
    const start = Number(m[1]);
    if (start >= size) {
      res.writeHead(416, { 'Content-Range': `bytes */${size}` }).end();
      return;
    }
    const end = Math.min(size - 1, Number(m[2]));
    let body = read(start, end + 1);
    if (behaviour === 'short') body = body.subarray(0, Math.max(0, body.byteLength - 7));
    if (behaviour === 'oversized') {
      // Headers that promise the range, then 64 MiB without a Content-Length.
      res.writeHead(206, { 'Content-Range': `bytes ${start}-${end}/${size}` });
      const block = Buffer.alloc(1024 * 1024);
      let left = 64;
      const pump = (): void => {
        while (left > 0 && !res.destroyed) {
          left -= 1;
          state.bytesSent += block.byteLength;
          if (!res.write(block)) return void res.once('drain', pump);
        }
        res.end();
      };
      pump();
      return;
    }
    if (behaviour === 'gzip-bomb') {
      // 1 GiB of zeros in about 1 MiB of gzip.
      res.writeHead(206, { 'Content-Range': `bytes ${start}-${end}/${size}`, 'Content-Encoding': 'gzip' });
      const gzip = createGzip({ level: 9 });
      gzip.pipe(res);
      const zeros = Buffer.alloc(1024 * 1024);
      let left = 1024;
      const feed = (): void => {
        while (left > 0 && !res.destroyed) {
          left -= 1;
          if (!gzip.write(zeros)) return void gzip.once('drain', feed);
        }
        gzip.end();
      };
      res.on('close', () => gzip.destroy());
      feed();
      return;
    }
    if (behaviour === 'stall-body' || behaviour === 'cut-body') {
      res.writeHead(206, { 'Content-Range': `bytes ${start}-${end}/${size}`, 'Content-Length': body.byteLength });
      res.write(body.subarray(0, Math.floor(body.byteLength / 2)));
      if (behaviour === 'cut-body') setTimeout(() => res.socket?.destroy(), 20);
      return; // stall: never ends
    }
    state.bytesSent += body.byteLength;
    res.writeHead(206, { 'Content-Range': `bytes ${start}-${end}/${size}`, 'Content-Length': body.byteLength });
    res.end(body);
  };
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    base: `http://127.0.0.1:${port}`,
    get bytesSent() {
      return state.bytesSent;
    },
    set bytesSent(v: number) {
      state.bytesSent = v;
    },
    get requests() {
      return state.requests;
    },
    set requests(v: number) {
      state.requests = v;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
