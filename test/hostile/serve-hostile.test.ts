import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fixture, inTempDir } from '../helpers.js';
import { assertCleanError, spawnPopef, until } from './spawn-popef.js';

/** `popef serve` under a hostile repository and hostile clients. */

const MNIST = fixture('mnist/executable.popef');

/** The port a running serve printed, once it is ready. */
function readyPort(stderr: string, kind: 'HTTP' | 'gRPC'): number | undefined {
  const m = new RegExp(`${kind} on [^:]+:(\\d+)`).exec(stderr);
  return m === null ? undefined : Number(m[1]);
}

describe('popef serve, hostile', () => {
  it('model names holding ESC sequences and newlines are escaped on stderr', async () => {
    await inTempDir(async (dir) => {
      const repo = join(dir, 'repo');
      await mkdir(repo);
      for (const model of ['ev\u001b[31mil\u001b]0;pwned\u0007', 'nl\nfake: READY']) {
        // scaffold refuses such names; a directory made by hand is what serve meets.
        await mkdir(join(repo, model));
      }
      const run = await spawnPopef(['scaffold', MNIST, '-r', repo, '-m', 'good']);
      assert.equal(run.code, 0, run.stderr);
      const served = await spawnPopef(['serve', repo, '--http-port', '0', '--grpc-port', '0'], {
        interrupt: { signal: 'SIGINT', when: async (_child, stderr) => until(() => /ready: /.test(stderr()), 20_000) },
        timeoutMs: 40_000,
      });
      assert.equal(served.code, 0, served.stderr);
      assert.ok(!served.stderr.includes('\u001b'), JSON.stringify(served.stderr));
      assert.ok(!/^fake: READY/m.test(served.stderr), served.stderr);
      assert.match(served.stderr, /model 'ev\\x1b\[31mil\\x1b\]0;pwned\\x07': UNAVAILABLE/);
      assert.match(served.stderr, /model 'nl\\x0afake: READY': UNAVAILABLE/);
      assert.ok(readyPort(served.stderr, 'HTTP') !== undefined);
    });
  });
});

describe('popef serve, ports', () => {
  it('a gRPC port in use prints only our message (no raw grpc-js line)', async () => {
    const { createServer } = await import('node:net');
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as { port: number }).port;
    try {
      await inTempDir(async (dir) => {
        const repo = join(dir, 'repo');
        assert.equal((await spawnPopef(['scaffold', MNIST, '-r', repo, '-m', 'mnist'])).code, 0);
        const run = await spawnPopef(['serve', repo, '--http-port', '0', '--grpc-port', String(port)]);
        assertCleanError(run, 2, new RegExp(`cannot serve gRPC on 127\\.0\\.0\\.1:${port}: the port is in use \\[E_IO\\]`));
        assert.ok(!/No address added/.test(run.stderr), run.stderr);
      });
    } finally {
      taken.close();
    }
  });
});
