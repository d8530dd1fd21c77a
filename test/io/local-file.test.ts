import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { syncBuiltinESMExports } from 'node:module';
import { describe, it, mock } from 'node:test';
import { FileSource } from '../../src/io/file-source.js';
import { LISTED_FIRST_READ, readRegularFile } from '../../src/io/local-file.js';
import { inTempDir } from '../helpers.js';

/** Bytes 0, 1, ..., 250, 0, 1, ...: a file whose every offset can be told apart from its neighbours. */
function counting(length: number): Buffer {
  const out = Buffer.alloc(length);
  for (let i = 0; i < length; i++) out[i] = i % 251;
  return out;
}

describe('reading a file the directory listing called regular (no fstat when it is small)', () => {
  it('gives the same bytes as a measured read, either side of the first read, and for an empty file', async () => {
    await inTempDir(async (dir) => {
      for (const length of [0, 1, 4096, LISTED_FIRST_READ - 1, LISTED_FIRST_READ, LISTED_FIRST_READ + 1, 3 * LISTED_FIRST_READ]) {
        const path = join(dir, `f${length}`);
        const bytes = counting(length);
        await writeFile(path, bytes);
        const listed = await readRegularFile(path, { what: 'the file', limit: 1024 ** 2, listedRegular: true });
        assert.deepEqual(listed, bytes, `${length} bytes, listed`);
        assert.deepEqual(await readRegularFile(path, { what: 'the file', limit: 1024 ** 2 }), bytes, `${length} bytes, measured`);
        const source = await FileSource.open(path, path, { listedRegular: true });
        try {
          assert.equal(source.size, length, `${length} bytes: the size`);
          if (length > 0) assert.deepEqual(await source.read(0, length, 'all'), new Uint8Array(bytes), `${length} bytes through FileSource`);
          await assert.rejects(source.read(length, 1, 'past the end'), /past the end/);
        } finally {
          await source.close();
        }
      }
    });
  });

  it('keeps each small read apart: the bytes returned are a copy, not the shared first-read buffer', async () => {
    await inTempDir(async (dir) => {
      await writeFile(join(dir, 'a'), 'first file');
      await writeFile(join(dir, 'b'), 'second');
      const a = await readRegularFile(join(dir, 'a'), { what: 'a', limit: 100, listedRegular: true });
      const b = await readRegularFile(join(dir, 'b'), { what: 'b', limit: 100, listedRegular: true });
      assert.equal(a.toString(), 'first file');
      assert.equal(b.toString(), 'second');
    });
  });

  it('still refuses a file over the limit, and a directory or a FIFO that took the listed name, without blocking', async () => {
    await inTempDir(async (dir) => {
      await writeFile(join(dir, 'big'), counting(300));
      await assert.rejects(
        readRegularFile(join(dir, 'big'), { what: 'config.pbtxt', limit: 100, listedRegular: true }),
        /config\.pbtxt is 300 bytes or more, over the limit of 100 bytes/,
      );
      // An entry replaced between the listing and the read: what was a file is now a directory, or a FIFO.
      await mkdir(join(dir, 'was-a-file'));
      await assert.rejects(
        readRegularFile(join(dir, 'was-a-file'), { what: 'config.pbtxt', limit: 100, listedRegular: true }),
        /cannot read config\.pbtxt: EISDIR/,
      );
      execFileSync('mkfifo', [join(dir, 'fifo')]);
      await assert.rejects(
        readRegularFile(join(dir, 'fifo'), { what: 'config.pbtxt', limit: 100, listedRegular: true }),
        /cannot read config\.pbtxt: ESPIPE/,
      );
      // Without the listing's word, a FIFO is refused as it always was.
      await assert.rejects(readRegularFile(join(dir, 'fifo'), { what: 'config.pbtxt', limit: 100 }), /a FIFO \(named pipe\), not a regular file/);
    });
  });

  it('does not read the first bytes of a longer file twice: the first read is the start of the whole read and of the window', async () => {
    await inTempDir(async (dir) => {
      const path = join(dir, 'long');
      const bytes = counting(3 * LISTED_FIRST_READ + 7);
      await writeFile(path, bytes);
      // The module's named import of readSync follows node:fs once the builtin's ES exports are synced.
      const reads: [number, number][] = [];
      const original = fs.readSync;
      mock.method(fs, 'readSync', (...args: Parameters<typeof fs.readSync>) => {
        const [, , , length, position] = args as unknown as [number, Uint8Array, number, number, number];
        reads.push([position, length]);
        return original(...args);
      });
      syncBuiltinESMExports();
      try {
        assert.deepEqual(await readRegularFile(path, { what: 'the file', limit: 1024 ** 2, listedRegular: true }), bytes);
        assert.deepEqual(
          reads.map(([position]) => position),
          [0, LISTED_FIRST_READ],
          'readRegularFile: the first read, then on from its end',
        );
        reads.length = 0;
        const source = await FileSource.open(path, path, { listedRegular: true });
        try {
          assert.deepEqual(await source.read(100, 200, 'inside the first read'), new Uint8Array(bytes.subarray(100, 300)));
          assert.deepEqual(reads, [[0, LISTED_FIRST_READ]], 'FileSource: the first read is its window');
        } finally {
          await source.close();
        }
      } finally {
        mock.restoreAll();
        syncBuiltinESMExports();
      }
    });
  });
});
