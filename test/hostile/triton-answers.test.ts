import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { fixture } from '../helpers.js';
import { assertCleanError, spawnPopef } from './spawn-popef.js';

/**
 * A lying inference server behind `popef run --plugin triton --url http://...`:
 * every size it declares is checked against a named limit (the outputs'
 * bytes plus RESPONSE_HEADER_LIMIT, src/run/triton-plugin.ts) before the
 * body is buffered. The answer is a plugin error (exit 2), in bounded memory.
 */

const MNIST = fixture('mnist/executable.popef');

async function lyingServer(infer: (req: IncomingMessage, res: ServerResponse) => void, body: (url: string) => Promise<void>): Promise<void> {
  const server = createServer((req, res) => {
    if (req.url === '/v2/health/ready') return void res.writeHead(200).end();
    req.resume();
    req.on('end', () => infer(req, res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    await body(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

function answer(res: ServerResponse, size: number, binary: Buffer): void {
  const json = Buffer.from(
    JSON.stringify({
      model_name: 'mnist',
      outputs: [{ name: 'softmax/Softmax:0', datatype: 'FP32', shape: [1, 10], parameters: { binary_data_size: size } }],
    }),
  );
  res.writeHead(200, { 'Inference-Header-Content-Length': json.byteLength, 'Content-Length': json.byteLength + binary.byteLength });
  res.end(Buffer.concat([json, binary]));
}

describe('the triton plugin against a lying server', () => {
  it('refuses a response declaring binary_data_size 4e9 with 40 bytes', async () => {
    await lyingServer(
      (_req, res) => answer(res, 4e9, Buffer.alloc(40)),
      async (url) => {
        const run = await spawnPopef(['run', MNIST, '--plugin', 'triton', '--url', url, '--plugin-option', 'model=mnist', '--random']);
        assertCleanError(
          run,
          2,
          /answered: output 'softmax\/Softmax:0' declares binary_data_size 4000000000, but 40 bytes of binary data are left \[E_PLUGIN\]/,
        );
      },
    );
  });

  it('refuses a 2 GiB body against its limit before buffering it, without a V8 abort', async () => {
    await lyingServer(
      (_req, res) => {
        // No Content-Length: chunks until the client gives up.
        res.writeHead(200, { 'Inference-Header-Content-Length': 10 });
        const chunk = Buffer.alloc(1024 * 1024, 0x20);
        let sent = 0;
        const pump = (): void => {
          while (sent < 2048 && !res.destroyed) {
            sent += 1;
            if (!res.write(chunk)) return void res.once('drain', pump);
          }
          res.end();
        };
        pump();
      },
      async (url) => {
        const run = await spawnPopef(['run', MNIST, '--plugin', 'triton', '--url', url, '--plugin-option', 'model=mnist', '--random'], {
          timeoutMs: 60_000,
        });
        assertCleanError(run, 2, /answered: a response of \d+ bytes or more, more than the 16777256 this model's outputs can take/);
        assert.ok((run.maxRssMiB ?? 0) < 400, `peak RSS ${run.maxRssMiB ?? '?'} MiB`);
      },
    );
  });

  it('refuses a declared Content-Length of 2 GiB at once', async () => {
    await lyingServer(
      (_req, res) => {
        res.writeHead(200, { 'Inference-Header-Content-Length': 10, 'Content-Length': 2 ** 31 });
        res.write(Buffer.alloc(1024));
      },
      async (url) => {
        const run = await spawnPopef(['run', MNIST, '--plugin', 'triton', '--url', url, '--plugin-option', 'model=mnist', '--random']);
        assertCleanError(run, 2, /answered: a response of 2147483648 bytes or more/);
      },
    );
  });
});
