import assert from 'node:assert/strict';
import { truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ErrorCode, PopefError } from '../../src/errors.js';
import { FileSource, MISS_WINDOW, OPEN_WINDOW } from '../../src/io/file-source.js';
import { inTempDir } from '../helpers.js';

// FileSource's read window (src/io/file-source.ts): reads served from the
// window, reads that cross its edge, reads at the end of the file, and a
// read past the end refused with a typed error naming the field.

/** Bytes that differ from their neighbours, so a read from the wrong offset shows. */
function pattern(size: number): Uint8Array {
  const bytes = new Uint8Array(size);
  for (let i = 0; i < size; i++) bytes[i] = (i * 31 + (i >> 8)) % 251;
  return bytes;
}

const SIZE = OPEN_WINDOW + 3 * MISS_WINDOW + 123;

async function withFile(body: (source: FileSource, bytes: Uint8Array, path: string) => Promise<void>): Promise<void> {
  await inTempDir(async (dir) => {
    const bytes = pattern(SIZE);
    const path = join(dir, 'data.bin');
    await writeFile(path, bytes);
    const source = await FileSource.open(path, 'data.bin');
    try {
      await body(source, bytes, path);
    } finally {
      await source.close();
    }
  });
}

/** Reads [offset, offset+length) and checks it against the file's bytes. */
async function readsAs(source: FileSource, bytes: Uint8Array, offset: number, length: number): Promise<void> {
  assert.deepEqual(await source.read(offset, length, 'field'), bytes.subarray(offset, offset + length), `read(${offset}, ${length})`);
}

describe('FileSource: reads through the window', () => {
  it('reads inside the open window, across its edge, and across a miss window’s edge', async () => {
    await withFile(async (source, bytes) => {
      assert.equal(source.size, SIZE);
      await readsAs(source, bytes, 0, 16);
      await readsAs(source, bytes, OPEN_WINDOW - 8, 8);
      // Straddles the end of the open window: a miss, read from its own offset.
      await readsAs(source, bytes, OPEN_WINDOW - 100, 200);
      // Inside the miss window just read, then straddling its end.
      await readsAs(source, bytes, OPEN_WINDOW, 50);
      await readsAs(source, bytes, OPEN_WINDOW - 100 + MISS_WINDOW - 10, 20);
      // Back to the start, after the window moved.
      await readsAs(source, bytes, 10, 30);
      // Larger than a window: read directly.
      await readsAs(source, bytes, 1, OPEN_WINDOW + 1);
      await readsAs(source, bytes, 0, SIZE);
    });
  });

  it('reads at the end of the file: the last bytes, and nothing at the end', async () => {
    await withFile(async (source, bytes) => {
      await readsAs(source, bytes, SIZE - 10, 10);
      // A miss near the end reads what is left, less than MISS_WINDOW.
      await readsAs(source, bytes, SIZE - 1, 1);
      assert.equal((await source.read(SIZE, 0, 'field')).byteLength, 0);
    });
  });

  it('gives a copy: changing what a read returned does not change the next read', async () => {
    await withFile(async (source, bytes) => {
      const first = await source.read(100, 10, 'field');
      first.fill(0);
      await readsAs(source, bytes, 100, 10);
    });
  });

  it('refuses a read past the end with a typed error naming the field and the offset', async () => {
    await withFile(async (source) => {
      for (const [offset, length] of [
        [SIZE - 5, 10],
        [SIZE, 1],
        [0, SIZE + 1],
      ] as const) {
        await assert.rejects(source.read(offset, length, 'blob payload'), (error: unknown) => {
          assert.ok(error instanceof PopefError);
          assert.equal(error.code, ErrorCode.Truncated);
          assert.equal(error.message, `file ends at byte ${SIZE}, but blob payload needs ${length} bytes from offset ${offset}`);
          assert.equal(error.file, 'data.bin');
          assert.equal(error.offset, offset);
          return true;
        });
      }
      await assert.rejects(source.read(-1, 1, 'field'), (error: unknown) => error instanceof PopefError && error.code === ErrorCode.BadStructure);
    });
  });

  it('a file that shrinks after open: a read outside the window is refused as truncated, not short', async () => {
    await withFile(async (source, _bytes, path) => {
      await truncate(path, OPEN_WINDOW + 10);
      await assert.rejects(source.read(OPEN_WINDOW + 5, 100, 'tensor data'), (error: unknown) => {
        assert.ok(error instanceof PopefError);
        assert.equal(error.code, ErrorCode.Truncated);
        assert.match(error.message, /^file ends at byte \d+, but tensor data needs \d+ bytes from offset \d+$/);
        return true;
      });
    });
  });
});

describe('FileSource: the windows of listed files are reused after close', () => {
  it('a window read again by the next open leaves what the first source gave intact, and a closed source serves nothing', async () => {
    await inTempDir(async (dir) => {
      // Smaller than the window, so each is read whole into it at open.
      const a = pattern(3000);
      const b = a.map((x) => 255 - x);
      await writeFile(join(dir, 'a.bin'), a);
      await writeFile(join(dir, 'b.bin'), b);
      const first = await FileSource.open(join(dir, 'a.bin'), 'a.bin', { listedRegular: true });
      const copied = await first.read(0, a.byteLength, 'field');
      await first.close();
      assert.equal(first.peek(0, 16, 'field'), undefined, 'a closed source keeps no window');
      await assert.rejects(
        first.read(0, 16, 'blob header'),
        (error: unknown) => error instanceof PopefError && error.message === 'file already closed',
      );
      // Several open at once (a version's files): each has its own window, whether reused or new.
      const second = await FileSource.open(join(dir, 'b.bin'), 'b.bin', { listedRegular: true });
      const third = await FileSource.open(join(dir, 'a.bin'), 'a.bin', { listedRegular: true });
      try {
        assert.deepEqual(copied, a);
        assert.deepEqual(second.peek(0, b.byteLength, 'field'), b);
        assert.deepEqual(third.peek(0, a.byteLength, 'field'), a);
        await readsAs(second, b, 100, 50);
      } finally {
        await second.close();
        await third.close();
      }
    });
  });
});
