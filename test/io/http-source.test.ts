import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fixture, inTempDir, runCli } from '../helpers.js';
import { startServer, type Behaviour } from './http-server.js';

async function serving<T>(behaviour: Behaviour, run: (base: string, server: Awaited<ReturnType<typeof startServer>>) => Promise<T>): Promise<T> {
  const files = new Map<string, Uint8Array>([
    ['/mnist.popef', await readFile(fixture('mnist/executable.popef'))],
    ['/bitflip.popef', await readFile(fixture('malformed/payload-bitflip.popef'))],
    ['/base.popef', await readFile(fixture('diff/base.popef'))],
    ['/dtype.popef', await readFile(fixture('diff/dtype-changed.popef'))],
  ]);
  const server = await startServer(files, behaviour);
  try {
    return await run(server.base, server);
  } finally {
    await server.close();
  }
}

describe('remote reads over HTTP Range requests', () => {
  it('dumps a remote file as a local one, fetching headers and metadata but not the payloads', async () => {
    await serving('ranges', async (base, server) => {
      const remote = await runCli(['dump', '--json', `${base}/mnist.popef`]);
      assert.equal(remote.code, 0, remote.stderr);
      const local = await runCli(['dump', '--json', fixture('mnist/executable.popef')]);
      assert.equal(remote.stdout.split(`${base}/mnist.popef`).join('X'), local.stdout.split(fixture('mnist/executable.popef')).join('X'));
      const size = (await readFile(fixture('mnist/executable.popef'))).byteLength;
      // One 64 KiB block covers this small file; the point is the bound, tested at scale in the benchmark.
      assert.ok(server.bytesSent <= size);
    });
  });

  it('verifies a remote file, reading every payload, and finds damage', async () => {
    await serving('ranges', async (base) => {
      const r = await runCli(['dump', '--verify', `${base}/bitflip.popef`]);
      assert.equal(r.code, 2);
      assert.match(r.stderr, /bitflip\.popef: offset 152: POPLAR_EXECUTABLE payload crc32: payload checksum mismatch/);
    });
  });

  it('diffs two remote files', async () => {
    await serving('ranges', async (base) => {
      const r = await runCli(['diff', `${base}/base.popef`, `${base}/dtype.popef`]);
      assert.equal(r.code, 1);
      assert.match(r.stdout, /dtype F32 -> F16/);
    });
  });

  it('explains a server without Range support', async () => {
    await serving('no-ranges', async (base) => {
      const r = await runCli(['dump', `${base}/mnist.popef`]);
      assert.equal(r.code, 2);
      assert.match(r.stderr, /the server does not support HTTP Range requests \(it answered 200 with the whole file\) \[E_IO\]/);
    });
  });

  it('reports a response cut short', async () => {
    await serving('short', async (base) => {
      const r = await runCli(['dump', `${base}/mnist.popef`]);
      assert.equal(r.code, 2);
      assert.match(r.stderr, /the server sent \d+ bytes for a range of \d+ at offset 0 .*\[E_TRUNCATED\]/);
    });
  });

  it('stops reading a 206 body larger than its range at the first byte too many', async () => {
    for (const behaviour of ['oversized', 'gzip-bomb'] as const) {
      await serving(behaviour, async (base) => {
        const before = process.memoryUsage().rss;
        const r = await runCli(['dump', `${base}/mnist.popef`]);
        assert.equal(r.code, 2, behaviour);
        assert.match(r.stderr, /the server sent more than the \d+ bytes of the range at offset 0 \(reading first block\) \[E_BAD_STRUCTURE\]/);
        assert.ok(
          process.memoryUsage().rss - before < 256 * 1024 ** 2,
          `${behaviour}: memory grew by ${(process.memoryUsage().rss - before) / 1024 ** 2} MiB`,
        );
      });
    }
  });

  it('reports a body that stalls after the headers as a timeout, and one cut short as a truncation', async () => {
    await serving('stall-body', async (base) => {
      const started = Date.now();
      const r = await runCli(['dump', `${base}/mnist.popef`], { env: { POPEF_HTTP_TIMEOUT_MS: '500' } });
      assert.equal(r.code, 2);
      assert.match(r.stderr, /\(reading first block\) \[E_TIMEOUT\]/);
      assert.ok(Date.now() - started < 10_000);
    });
    await serving('cut-body', async (base) => {
      const r = await runCli(['dump', `${base}/mnist.popef`]);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /the server sent \d+ bytes for a range of \d+ at offset 0 \(reading first block\) \[E_TRUNCATED\]/);
    });
  });

  it('gives up on a silent server after the timeout', async () => {
    await serving('silent', async (base) => {
      const started = Date.now();
      const r = await runCli(['dump', `${base}/mnist.popef`], { env: { POPEF_HTTP_TIMEOUT_MS: '500' } });
      assert.equal(r.code, 2);
      assert.match(r.stderr, /no answer from the server within 0\.5 s \(reading first block\) \[E_TIMEOUT\]/);
      assert.ok(Date.now() - started < 10_000);
    });
  });

  it('stops at a redirect loop', async () => {
    await serving('redirect-loop', async (base) => {
      const r = await runCli(['dump', `${base}/a`]);
      assert.equal(r.code, 2);
      assert.match(r.stderr, /redirect loop through http:\/\/127\.0\.0\.1:\d+\/(a|b) \[E_IO\]/);
    });
  });

  it('reports a missing file', async () => {
    await serving('ranges', async (base) => {
      const r = await runCli(['dump', `${base}/nope.popef`]);
      assert.equal(r.code, 2);
      assert.match(r.stderr, /the server answered 404/);
    });
  });
});

describe('remote reads: requests, deadline, redirects', () => {
  /** A file of 200 opaque blobs of 70,000 bytes after the MNIST model: a header walk of 206 blobs. */
  async function manyBlobs(dir: string): Promise<Uint8Array> {
    assert.equal((await runCli(['unpack', fixture('mnist/executable.popef'), '-o', join(dir, 'u')])).code, 0);
    const manifest = JSON.parse(await readFile(join(dir, 'u/manifest.json'), 'utf8')) as { blobs: { type: string; name?: string }[] };
    const executable = manifest.blobs.find((b) => b.type === 'POPLAR_EXECUTABLE')?.name ?? '';
    await writeFile(join(dir, 'u/pad.bin'), Buffer.alloc(70_000));
    for (let i = 0; i < 200; i++) manifest.blobs.push({ type: 'OPAQUE', name: `blob${i}`, executable, file: 'pad.bin' } as never);
    await writeFile(join(dir, 'u/manifest.json'), JSON.stringify(manifest));
    assert.equal((await runCli(['pack', join(dir, 'u/manifest.json'), '-o', join(dir, 'many.popef')])).code, 0);
    return readFile(join(dir, 'many.popef'));
  }

  it('dump of a 200-blob file does not take 202 requests', async () => {
    await inTempDir(async (dir) => {
      const server = await startServer(new Map([['/many.popef', await manyBlobs(dir)]]));
      try {
        const r = await runCli(['dump', `${server.base}/many.popef`]);
        assert.equal(r.code, 0, r.stderr);
        assert.ok(server.requests <= 12, `${server.requests} requests`);
      } finally {
        await server.close();
      }
    });
  });

  it('a server answering each request after a while stops at the overall deadline, naming its setting', async () => {
    await inTempDir(async (dir) => {
      const server = await startServer(new Map([['/many.popef', await manyBlobs(dir)]]), 'ranges', { delayMs: 250 });
      try {
        const started = Date.now();
        const r = await runCli(['dump', `${server.base}/many.popef`], { env: { POPEF_HTTP_DEADLINE_MS: '600' } });
        assert.equal(r.code, 2, r.stderr);
        assert.match(
          r.stderr,
          /reading from the server took longer than 0\.6 s in all \(stopped at .*\) \[E_TIMEOUT\]\n {2}hint: the server is slow: raise POPEF_HTTP_DEADLINE_MS/,
        );
        assert.ok(Date.now() - started < 3000);
      } finally {
        await server.close();
      }
    });
  });

  it('a redirect to another host is not followed', async () => {
    const probe = await startServer(new Map());
    const port = new URL(probe.base).port;
    await probe.close();
    const server = await startServer(new Map([['/mnist.popef', await readFile(fixture('mnist/executable.popef'))]]), 'ranges', {
      redirects: new Map([['/elsewhere', `http://localhost:${port}/mnist.popef`]]),
    });
    try {
      const r = await runCli(['dump', `${server.base}/elsewhere`]);
      assert.equal(r.code, 2);
      assert.match(
        r.stderr,
        /redirect 302 to another host \(localhost:\d+\) is not followed: http:\/\/localhost:\d+\/mnist\.popef \[E_IO\]\n {2}hint: if you trust that URL, give it directly/,
      );
      assert.equal(server.requests, 1);
    } finally {
      await server.close();
    }
  });

  it('a redirect to a data: or file: URL is not fetched', async () => {
    const server = await startServer(new Map(), 'ranges', {
      redirects: new Map([
        ['/data', 'data:application/octet-stream;base64,UE9QRUY='],
        ['/file', 'file:///etc/passwd'],
      ]),
    });
    try {
      assert.match((await runCli(['dump', `${server.base}/data`])).stderr, /redirect 302 to a data: URL is not followed: data:\.\.\. \[E_IO\]/);
      assert.match(
        (await runCli(['dump', `${server.base}/file`])).stderr,
        /redirect 302 to a file: URL is not followed: file:\/\/\/etc\/passwd \[E_IO\]/,
      );
    } finally {
      await server.close();
    }
  });

  it('a redirect on the same host is followed and the report names the URL actually read', async () => {
    const server = await startServer(new Map([['/real/mnist.popef', await readFile(fixture('mnist/executable.popef'))]]), 'ranges', {
      redirects: new Map([['/latest', '/real/mnist.popef']]),
    });
    try {
      const r = await runCli(['dump', `${server.base}/latest`]);
      assert.equal(r.code, 0, r.stderr);
      assert.ok(r.stdout.includes(`${server.base}/real/mnist.popef`), r.stdout.slice(0, 300));
      assert.ok(!r.stdout.includes('/latest'));
    } finally {
      await server.close();
    }
  });
});
