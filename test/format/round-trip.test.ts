import assert from 'node:assert/strict';
import { readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ErrorCode, MemorySource, ModelSet, PopefError, PopefFile, PopefWriter, emptyMetadata, sizeInBytes } from '../../src/index.js';
import { fixture, inTempDir, tempDir } from '../helpers.js';
import { metadataFor, tensorInfo } from './arbitraries.js';

async function collect(chunks: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  for await (const c of chunks) parts.push(c);
  return Buffer.concat(parts);
}

describe('writer -> reader round trips', () => {
  it('keeps every metadata field, tensor, feed and opaque blob (property)', async () => {
    const { dir, cleanup } = await tempDir();
    let n = 0;
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.string({ minLength: 1, maxLength: 12 }),
          fc.uint8Array({ maxLength: 300 }),
          fc.boolean(),
          tensorInfo,
          fc.integer({ min: 0, max: 3 }),
          fc.uint8Array({ maxLength: 50 }),
          async (exeName, body, compress, feedInfo, samples, opaque) => {
            const path = join(dir, `rt-${n++}.popef`);
            const metadata = fc.sample(metadataFor(exeName), { numRuns: 1, seed: n })[0] ?? emptyMetadata(exeName);
            const feedBytes = new Uint8Array(Number(sizeInBytes(feedInfo)) * samples).map((_, i) => i % 251);
            const w = await PopefWriter.create(path);
            await w.writeExecutable(exeName, body, { compress });
            await w.writeMetadata(metadata);
            await w.writeFeedData({ name: 'feed', tensorInfo: feedInfo, sampleCount: samples }, [feedBytes]);
            await w.writeOpaque({ name: 'state', executable: exeName }, opaque);
            await w.close();
            const set = await ModelSet.open([path]);
            try {
              const model = set.models[0];
              assert.ok(model);
              // fast-check builds null-prototype records; compare as plain data.
              assert.deepEqual(model.metadata, JSON.parse(JSON.stringify(metadata)));
              assert.equal(model.executable.compressed, compress);
              assert.ok((await collect(set.fileOf(model.executable).payloadChunks(model.executable))).equals(body));
              const feed = set.feeds[0];
              assert.ok(feed);
              assert.deepEqual(feed.tensorInfo, JSON.parse(JSON.stringify(feedInfo)));
              assert.equal(feed.sampleCount, samples);
              assert.ok((await collect(set.fileOf(feed).payloadChunks(feed))).equals(feedBytes));
              const op = model.opaques[0];
              assert.ok(op);
              assert.ok((await collect(set.fileOf(op).payloadChunks(op))).equals(opaque));
              for (const blob of set.blobs) await set.fileOf(blob).verifyBlob(blob);
            } finally {
              await set.close();
            }
          },
        ),
        { numRuns: 60 },
      );
    } finally {
      await cleanup();
    }
  });

  it('writes the same bytes for the same input', async () => {
    await inTempDir(async (dir) => {
      const write = async (name: string): Promise<Buffer> => {
        const w = await PopefWriter.create(join(dir, name));
        await w.writeExecutable('e', new Uint8Array(5000).fill(3), { compress: true });
        await w.writeMetadata(emptyMetadata('e'));
        await w.close();
        return readFile(join(dir, name));
      };
      assert.ok((await write('a.popef')).equals(await write('b.popef')));
    });
  });

  it('streams a payload given as an async iterable of chunks', async () => {
    await inTempDir(async (dir) => {
      const path = join(dir, 's.popef');
      const w = await PopefWriter.create(path);
      function* chunks(): Generator<Uint8Array> {
        for (let i = 0; i < 10; i++) yield new Uint8Array(1000).fill(i);
      }
      await w.writeExecutable('e', chunks());
      await w.close();
      const f = await PopefFile.open(path);
      const blob = f.blobs[0];
      assert.ok(blob);
      assert.equal(blob.payloadLength, 10_000);
      const all = await collect(f.payloadChunks(blob, 777));
      assert.equal(all[9999], 9);
      await f.close();
    });
  });
});

describe('append mode', () => {
  it('adds blobs after the existing bytes without changing them', async () => {
    await inTempDir(async (dir) => {
      const path = join(dir, 'model.popef');
      const original = await readFile(fixture('seed/executable.popef'));
      await writeFile(path, original);
      const w = await PopefWriter.create(path, { append: true });
      await w.writeOpaque({ name: 'poptorch', executable: '5230962391836378370' }, new Uint8Array([1, 2, 3]));
      await w.close();
      const after = await readFile(path);
      assert.ok(after.subarray(0, original.byteLength).equals(original));
      const set = await ModelSet.open([path]);
      assert.equal(set.models[0]?.opaques[0]?.name, 'poptorch');
      assert.equal(set.files[0]?.segmentEnds.length, 2);
      await set.close();
    });
  });

  it('refuses to append to a damaged file and leaves it untouched', async () => {
    await inTempDir(async (dir) => {
      const path = join(dir, 'cut.popef');
      const bytes = await readFile(fixture('malformed/truncated-payload.popef'));
      await writeFile(path, bytes);
      await assert.rejects(PopefWriter.create(path, { append: true }), (e: unknown) => e instanceof PopefError && e.code === ErrorCode.Truncated);
      assert.ok((await readFile(path)).equals(bytes));
    });
  });

  it('cuts the file back when an appended blob fails', async () => {
    await inTempDir(async (dir) => {
      const path = join(dir, 'model.popef');
      const original = await readFile(fixture('seed/executable.popef'));
      await writeFile(path, original);
      const w = await PopefWriter.create(path, { append: true });
      await assert.rejects(
        w.writeTensorData({ name: 't', tensorInfo: { dtype: 'F32', shape: [4] } }, new Uint8Array(15)),
        /payload has 15 bytes, but 16 are required/,
      );
      assert.ok((await readFile(path)).equals(original));
    });
  });
});

describe('writer safety', () => {
  it('never overwrites without force, and leaves no temporary file on error', async () => {
    await inTempDir(async (dir) => {
      const path = join(dir, 'x.popef');
      await writeFile(path, 'keep me');
      await assert.rejects(PopefWriter.create(path), (e: unknown) => e instanceof PopefError && e.code === ErrorCode.Exists);
      const w = await PopefWriter.create(join(dir, 'y.popef'));
      await assert.rejects(
        w.writeTensorData({ name: 't', tensorInfo: { dtype: 'U8', shape: [3] } }, new Uint8Array(4)),
        (e: unknown) => e instanceof PopefError && e.code === ErrorCode.InvalidInput,
      );
      assert.deepEqual((await readdir(dir)).sort(), ['x.popef']);
      assert.equal(await readFile(path, 'utf8'), 'keep me');
    });
  });

  it('replaces atomically with force', async () => {
    await inTempDir(async (dir) => {
      const path = join(dir, 'x.popef');
      await writeFile(path, 'old');
      const w = await PopefWriter.create(path, { force: true });
      await w.writeExecutable('e', new Uint8Array(3));
      assert.equal(await readFile(path, 'utf8'), 'old', 'the destination is untouched until close()');
      await w.close();
      const reread = await PopefFile.open(path);
      assert.equal(reread.blobs.length, 1);
      await reread.close();
      assert.deepEqual((await readdir(dir)).sort(), ['x.popef']);
    });
  });

  it('rejects invalid names and values with typed errors', async () => {
    await inTempDir(async (dir) => {
      const w = await PopefWriter.create(join(dir, 'v.popef'));
      await assert.rejects(w.writeExecutable('', new Uint8Array(1)), /executable name must not be empty/);
      // A rejected argument writes nothing and leaves the writer usable.
      await w.writeExecutable('fine', new Uint8Array(1));
      await w.abort();
      assert.deepEqual(await readdir(dir), []);
    });
  });

  it('aborts when the signal fires mid-payload', async () => {
    await inTempDir(async (dir) => {
      const controller = new AbortController();
      const w = await PopefWriter.create(join(dir, 'i.popef'), { signal: controller.signal });
      function* chunks(): Generator<Uint8Array> {
        yield new Uint8Array(10);
        controller.abort();
        yield new Uint8Array(10);
      }
      await assert.rejects(w.writeExecutable('e', chunks()), /interrupted/);
      assert.deepEqual(await readdir(dir), []);
    });
  });
});

describe('hostile bytes (property)', () => {
  it('any byte sequence after a valid header gives a model or a typed error, never a crash', async () => {
    const valid = new Uint8Array(await readFile(fixture('weights/executable.popef')));
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.nat(valid.byteLength - 1), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 8 }),
        async (edits) => {
          const bytes = valid.slice();
          for (const [at, value] of edits) bytes[at] = value;
          try {
            const set = await ModelSet.open([new MemorySource(bytes, 'fuzz.popef')]);
            await set.close();
          } catch (error) {
            assert.ok(error instanceof PopefError, `untyped error: ${String(error)}`);
          }
        },
      ),
      { numRuns: 500 },
    );
  });
});
