import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DecodedByBytes, MAX_KEPT_BYTES } from '../../src/format/decoded-by-bytes.js';
import { PopefFile } from '../../src/format/reader.js';
import { crc32 } from '../../src/io/platform.js';
import { decodeMetadata } from '../../src/schema/decode.js';
import type { Metadata } from '../../src/schema/model.js';
import { fixture } from '../helpers.js';

// The reader's decode cache (src/format/decoded-by-bytes.ts): bytes met
// again are decoded once, and what it gives back is what an uncached decode
// of those bytes gives.

/** The metadata blob's payload of the MNIST fixture: real FlatBuffers bytes. */
async function metadataBytes(): Promise<Uint8Array> {
  const file = await PopefFile.open(fixture('mnist/executable.popef'));
  try {
    const blob = file.blobs.find((b) => b.kind === 'metadata');
    assert.ok(blob !== undefined, 'the fixture has a metadata blob');
    return await file.source.read(blob.payloadOffset, blob.payloadLength, 'metadata');
  } finally {
    await file.close();
  }
}

const WHERE = { file: 'test.popef', offset: 0 };

/** A decode of metadata that counts its calls. */
function countingDecode(): { decode: (bytes: Uint8Array) => () => Metadata; calls: () => number } {
  let calls = 0;
  return {
    decode: (bytes) => () => {
      calls += 1;
      return decodeMetadata(bytes, WHERE);
    },
    calls: () => calls,
  };
}

describe('DecodedByBytes: a decode cache keyed by the bytes', () => {
  it('the same bytes, in another buffer, are decoded once; the value equals an uncached decode and is frozen', async () => {
    const bytes = await metadataBytes();
    const cache = new DecodedByBytes<Metadata>();
    const { decode, calls } = countingDecode();
    const first = cache.get(bytes, crc32(bytes), decode(bytes));
    const again = Uint8Array.from(bytes);
    const second = cache.get(again, crc32(again), decode(again));
    assert.equal(calls(), 1);
    assert.equal(second, first);
    assert.deepEqual(first, decodeMetadata(Uint8Array.from(bytes), WHERE));
    // Shared by every file with these bytes: a caller's slip throws instead of changing another file's model.
    assert.ok(Object.isFrozen(first) && Object.isFrozen(first.anchors) && Object.isFrozen(first.anchors[0]));
  });

  it('bytes with one byte changed are decoded again, to what an uncached decode gives', async () => {
    const bytes = await metadataBytes();
    const cache = new DecodedByBytes<Metadata>();
    const { decode, calls } = countingDecode();
    const original = cache.get(bytes, crc32(bytes), decode(bytes));
    // One letter of the first anchor's name, a byte the verifier accepts whatever it is. FlatBuffers writes a
    // string as its 32-bit length and its bytes; the same letters appear in other strings (a handle) too.
    const name = original.anchors[0]?.name ?? '';
    const prefix = Buffer.alloc(4);
    prefix.writeUInt32LE(Buffer.byteLength(name));
    const at = Buffer.from(bytes).indexOf(Buffer.concat([prefix, Buffer.from(name)])) + 4;
    assert.ok(name.length > 0 && at >= 4, 'the anchor name is in the bytes');
    const changed = Uint8Array.from(bytes);
    changed[at] = (changed[at] ?? 0) ^ 0x01;
    const decoded = cache.get(changed, crc32(changed), decode(changed));
    assert.equal(calls(), 2);
    assert.notEqual(decoded.anchors[0]?.name, name);
    assert.deepEqual(decoded, decodeMetadata(Uint8Array.from(changed), WHERE));
    // The first bytes still find their own value.
    assert.equal(cache.get(bytes, crc32(bytes), decode(bytes)), original);
    assert.equal(calls(), 2);
  });

  it('a CRC that matches is not enough: different bytes under the same CRC are decoded again', () => {
    const cache = new DecodedByBytes<string>();
    const crc = 1234;
    assert.equal(
      cache.get(Uint8Array.of(1, 2, 3), crc, () => 'a'),
      'a',
    );
    assert.equal(
      cache.get(Uint8Array.of(1, 2, 4), crc, () => 'b'),
      'b',
    );
    assert.equal(
      cache.get(Uint8Array.of(1, 2, 3), crc, () => 'not kept'),
      'a',
    );
  });

  it('keeps a copy of the bytes: the caller may reuse its buffer', () => {
    const cache = new DecodedByBytes<string>();
    const buffer = Uint8Array.of(7, 7, 7);
    cache.get(buffer, crc32(buffer), () => 'sevens');
    buffer.fill(8);
    assert.equal(
      cache.get(buffer, crc32(Uint8Array.of(7, 7, 7)), () => 'eights'),
      'eights',
    );
    assert.equal(
      cache.get(Uint8Array.of(7, 7, 7), crc32(Uint8Array.of(7, 7, 7)), () => 'again'),
      'sevens',
    );
  });

  it('a failed decode is not kept, and a buffer over MAX_KEPT_BYTES is decoded every time', () => {
    const cache = new DecodedByBytes<number>();
    const bytes = Uint8Array.of(9);
    assert.throws(() =>
      cache.get(bytes, crc32(bytes), () => {
        throw new Error('bad bytes');
      }),
    );
    assert.equal(
      cache.get(bytes, crc32(bytes), () => 1),
      1,
    );
    const large = new Uint8Array(MAX_KEPT_BYTES + 1);
    let calls = 0;
    const decode = (): number => ++calls;
    cache.get(large, crc32(large), decode);
    cache.get(large, crc32(large), decode);
    assert.equal(calls, 2);
  });
});
