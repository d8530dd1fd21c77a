import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { describe, it } from 'node:test';
import { FrameReader, ProtocolError, writeChunks, writeMessage, type Announcement } from '../../src/run/protocol.js';

const MiB = 1024 * 1024;

function pattern(n: number, seed: number): Uint8Array {
  return new Uint8Array(n).map((_, i) => (i * 31 + seed) & 0xff);
}

async function* from(parts: Uint8Array[]): AsyncGenerator<Uint8Array> {
  for (const p of parts) {
    await Promise.resolve();
    yield p;
  }
}

describe('chunked tensors in the plugin protocol', () => {
  for (const reuse of [false, true]) {
    it(`gives back every byte, in order, across frames and pipe reads (reuse: ${reuse})`, async () => {
      const pipe = new PassThrough();
      const reader = new FrameReader(pipe);
      const parts = [pattern(3 * MiB + 17, 1), pattern(1, 2), pattern(5 * MiB, 3), pattern(65_537, 4)];
      const bytes = parts.reduce((n, p) => n + p.byteLength, 0);
      const announcement: Announcement = { name: 'w', dtype: 'U8', shape: [bytes], bytes, chunked: true };
      const writing = (async () => {
        await writeMessage(pipe, { type: 'blob', id: 7, tensors: [announcement] }, []);
        assert.equal(await writeChunks(pipe, from(parts)), bytes);
      })();
      const head = await reader.nextMessage();
      assert.equal(head.message.type, 'blob');
      assert.deepEqual(head.announced[0], announcement);
      const got: Buffer[] = [];
      // With reuse, a chunk is only valid until the next: keep copies.
      for await (const c of reader.chunks(announcement, reuse)) got.push(Buffer.from(c));
      await writing;
      assert.ok(Buffer.concat(got).equals(Buffer.concat(parts)));
    });
  }

  it('receives a whole tensor into a lent buffer of its exact size, large or small, and ignores one of another size', async () => {
    for (const size of [3 * MiB + 5, 100]) {
      const pipe = new PassThrough();
      const reader = new FrameReader(pipe);
      const data = pattern(size, 9);
      const other = pattern(50, 1);
      const announce = (name: string, bytes: number): Announcement => ({ name, dtype: 'U8', shape: [bytes], bytes });
      const writing = writeMessage(pipe, { type: 'result', id: 1, tensors: [announce('y', size), announce('z', 50)] }, [data, other]);
      const lent = new Uint8Array(size);
      const wrongSize = new Uint8Array(49);
      const got = await reader.next(
        new Map([
          ['y', lent],
          ['z', wrongSize],
        ]),
      );
      await writing;
      const y = got.tensors.find((t) => t.name === 'y')?.data;
      const z = got.tensors.find((t) => t.name === 'z')?.data;
      assert.ok(y !== undefined && y.buffer === lent.buffer && y.byteOffset === lent.byteOffset, `size ${size}: not received into the lent buffer`);
      assert.ok(Buffer.from(lent).equals(Buffer.from(data)));
      assert.ok(z !== undefined && z.buffer !== wrongSize.buffer && Buffer.from(z).equals(Buffer.from(other)));
    }
  });

  it('rejects a chunk that runs past the announced size', async () => {
    const pipe = new PassThrough();
    const reader = new FrameReader(pipe);
    await writeChunks(pipe, from([pattern(10, 0)]));
    const it = reader.chunks({ name: 'w', dtype: 'U8', shape: [4], bytes: 4, chunked: true });
    await assert.rejects(it.next(), (e: unknown) => e instanceof ProtocolError && /a chunk of tensor "w" has 10 bytes with 4 left/.test(e.message));
  });

  it('stops reading a fast writer while the consumer lags (flow control), and goes on after', async () => {
    const pipe = new PassThrough({ highWaterMark: 64 * 1024 });
    const reader = new FrameReader(pipe);
    const parts = Array.from({ length: 16 }, (_, i) => pattern(2 * MiB, i));
    const bytes = 32 * MiB;
    const writing = writeChunks(pipe, from(parts));
    await new Promise((r) => setTimeout(r, 100));
    // Nothing is consumed yet: the reader must have paused the stream, so
    // the writer is held back by the pipe instead of filling our memory.
    assert.equal(pipe.isPaused(), true);
    let settled = false;
    void writing.then(() => (settled = true));
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(settled, false, 'the writer must be waiting for the reader');
    let total = 0;
    for await (const c of reader.chunks({ name: 'w', dtype: 'U8', shape: [bytes], bytes, chunked: true })) total += c.byteLength;
    assert.equal(total, bytes);
    assert.equal(await writing, bytes);
  });
});
