import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fixture, inTempDir } from '../helpers.js';
import { assertCleanError, spawnPopef } from './spawn-popef.js';

/**
 * Writes onto a read-only file system and a full one, on real tmpfs mounts
 * (this needs root, as the CI container is): the error names the real
 * reason, and nothing is left behind, not even an empty directory.
 */

const MNIST = fixture('mnist/executable.popef');
const root = process.getuid?.() === 0;

async function withMount<T>(options: string, body: (dir: string) => Promise<T>): Promise<T> {
  return inTempDir(async (dir) => {
    const mount = join(dir, 'mnt');
    await mkdir(mount);
    execFileSync('mount', ['-t', 'tmpfs', '-o', options, 'tmpfs', mount]);
    try {
      return await body(mount);
    } finally {
      execFileSync('umount', [mount]);
    }
  });
}

describe('write errors', { skip: root ? false : 'mounting a tmpfs needs root' }, () => {
  it('scaffold and config on a read-only target say EROFS, not ENOENT', async () => {
    await withMount('size=1m,ro', async (ro) => {
      assertCleanError(
        await spawnPopef(['scaffold', MNIST, '-r', join(ro, 'repo'), '-m', 'mnist']),
        2,
        /repo: cannot create the repository directory: EROFS \[E_IO\]\n {2}hint: choose a writable destination/,
      );
      assertCleanError(await spawnPopef(['scaffold', MNIST, '-r', ro, '-m', 'mnist']), 2, /cannot write into the repository: EROFS/);
      assertCleanError(await spawnPopef(['config', MNIST, '-o', join(ro, 'a/b')]), 2, /cannot create the directory: EROFS/);
    });
  });

  it('on ENOSPC, config -o DIR, run --save-outputs DIR and scaffold -r REPO leave no empty directories behind', async () => {
    await withMount('size=64k', async (full) => {
      // Fill it: a tmpfs of 64 KiB holds 16 pages.
      await writeFile(join(full, 'fill'), Buffer.alloc(64 * 1024)).catch(() => undefined);
      assertCleanError(await spawnPopef(['config', MNIST, '-o', join(full, 'a/b')]), 2, /config\.pbtxt: cannot write: ENOSPC/);
      const run = await spawnPopef(['run', MNIST, '--plugin', 'cpu', '--random', '--save-outputs', join(full, 'out/deeper')]);
      assert.equal(run.code, 2, run.stderr);
      assert.match(run.stderr, /cannot write: ENOSPC/);
      assertCleanError(await spawnPopef(['scaffold', MNIST, '-r', join(full, 'repo'), '-m', 'mnist']), 2, /cannot write: ENOSPC/);
      assert.deepEqual(await readdir(full), ['fill']);
    });
  });
});

describe('write errors through the SDK bridge', { skip: root ? false : 'mounting a tmpfs needs root' }, () => {
  it('export onto a read-only target shows a clear message instead of a raw Python OSError', async () => {
    await withMount('size=1m,ro', async (ro) => {
      const run = await spawnPopef(['export', MNIST, '-o', join(ro, 'x.popef')], {
        env: { PYTHONPATH: fixture('sim-sdk'), POPEF_PYTHON: process.env.POPEF_PYTHON ?? '/usr/bin/python3' },
      });
      assertCleanError(run, 2, /x\.popef: the file system refused it: EROFS \(Read-only file system\) \(E_IO\)/);
      assert.ok(!/OSError|messages above|popef-tmp-/.test(run.stderr), run.stderr);
      assert.match(run.stderr, /hint: choose a writable destination/);
    });
  });
});
