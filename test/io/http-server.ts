import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * A local HTTP server on 127.0.0.1 for the remote-read tests and benchmark:
 * serves byte buffers by path with Range support, and misbehaves on request
 * (no ranges, short bodies, silence, redirect loops). Counts bytes sent.
 */
export type Behaviour = 'ranges' | 'no-ranges' | 'short' | 'silent' | 'redirect-loop';

export interface TestServer {
  readonly base: string;
  bytesSent: number;
  requests: number;
  close(): Promise<void>;
}

export async function startServer(files: ReadonlyMap<string, Uint8Array | { size: number; read: (start: number, end: number) => Uint8Array }>, behaviour: Behaviour = 'ranges'): Promise<TestServer> {
  const state = { bytesSent: 0, requests: 0 };
  const sockets = new Set<Socket>();
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    state.requests += 1;
    const path = req.url ?? '/';
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
    state.bytesSent += body.byteLength;
    res.writeHead(206, { 'Content-Range': `bytes ${start}-${end}/${size}`, 'Content-Length': body.byteLength });
    res.end(body);
  });
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
