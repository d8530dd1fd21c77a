import assert from 'node:assert/strict';
import { readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { PopefError } from '../../src/errors.js';
import { commitAtomically } from '../../src/io/commit.js';
import { inTempDir } from '../helpers.js';

describe('commitAtomically, the last step of every writer', () => {
  it('moves the temporary file into place, never over an existing file without force, and over it with force', async () => {
    await inTempDir(async (dir) => {
      const path = join(dir, 'out.popef');
      await writeFile(join(dir, 'tmp1'), 'first');
      await commitAtomically(join(dir, 'tmp1'), path);
      assert.equal(await readFile(path, 'utf8'), 'first');
      await writeFile(join(dir, 'tmp2'), 'second');
      await assert.rejects(commitAtomically(join(dir, 'tmp2'), path, { what: 'exported file' }), (error: unknown) => {
        assert.ok(error instanceof PopefError);
        assert.match(error.message, /cannot move the exported file into place: EEXIST$/);
        // The library's own option, which the CLI names as --force (src/cli/report-error.ts).
        assert.equal(error.suggestion, 'choose another destination, or pass force: true to replace it');
        assert.equal(error.suggestedOption, 'force');
        return true;
      });
      assert.equal(await readFile(path, 'utf8'), 'first');
      await commitAtomically(join(dir, 'tmp2'), path, { force: true });
      assert.equal(await readFile(path, 'utf8'), 'second');
      assert.deepEqual(await readdir(dir), ['out.popef']);
    });
  });
});
