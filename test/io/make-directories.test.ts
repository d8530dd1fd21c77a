// mkdir -p with undo (src/io/make-directories.ts): what it makes and takes
// back, the system's own reason when it cannot, and that it returns for a
// path under /proc, where Node 20's recursive mkdir never does.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { makeDirectories, makeDirectoriesSync } from '../../src/io/make-directories.js';
import { inTempDir } from '../helpers.js';

const code = (error: unknown): string | undefined => (error as NodeJS.ErrnoException).code;

describe('makeDirectories', () => {
  it('makes what is missing, and its undo removes only those, deepest first', async () => {
    await inTempDir(async (dir) => {
      await mkdir(join(dir, 'a'));
      const made = await makeDirectories(join(dir, 'a', 'b', 'c'));
      assert.ok(existsSync(join(dir, 'a', 'b', 'c')));
      await made.undo();
      assert.ok(!existsSync(join(dir, 'a', 'b')), 'b and c were made by the call');
      assert.ok(existsSync(join(dir, 'a')), 'a was there before');
      // A directory that exists already: nothing made, nothing undone.
      await (await makeDirectories(join(dir, 'a'))).undo();
      assert.ok(existsSync(join(dir, 'a')));
    });
  });

  it('keeps what was put inside since: undo stops at a directory that is not empty', async () => {
    await inTempDir(async (dir) => {
      const made = await makeDirectories(join(dir, 'x', 'y'));
      await writeFile(join(dir, 'x', 'kept.txt'), 'k');
      await made.undo();
      assert.ok(!existsSync(join(dir, 'x', 'y')));
      assert.ok(existsSync(join(dir, 'x', 'kept.txt')));
    });
  });

  it('fails with the system’s reason: a file in the way', async () => {
    await inTempDir(async (dir) => {
      await writeFile(join(dir, 'file'), 'f');
      await assert.rejects(makeDirectories(join(dir, 'file', 'sub')), (error: unknown) => code(error) === 'ENOTDIR');
      assert.throws(
        () => makeDirectoriesSync(join(dir, 'file', 'sub'), 0o700),
        (error: unknown) => code(error) === 'ENOTDIR',
      );
    });
  });

  it('returns for a path under /proc, with ENOENT, both ways', { skip: !existsSync('/proc/self') }, async () => {
    const path = join('/proc', `popef-${process.pid}`, 'cache');
    await assert.rejects(makeDirectories(path), (error: unknown) => code(error) === 'ENOENT');
    assert.throws(
      () => makeDirectoriesSync(path, 0o700),
      (error: unknown) => code(error) === 'ENOENT',
    );
  });
});
