import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { describe, it } from 'node:test';
import { MemorySource, ModelSet, PopefError } from '../../src/index.js';
import { HEADER_SIZE } from '../../src/format/constants.js';
import { decodeHeader } from '../../src/format/header.js';
import { fixture, fixtureManifest } from '../helpers.js';

/** Opens bytes as a one-file model set and reads every byte of every blob. */
async function openAndVerify(bytes: Uint8Array): Promise<void> {
  const set = await ModelSet.open([new MemorySource(bytes, 'damaged.popef')]);
  try {
    for (const blob of set.blobs) await set.fileOf(blob).verifyBlob(blob);
  } finally {
    await set.close();
  }
}

async function expectTypedError(bytes: Uint8Array, what: string): Promise<void> {
  try {
    await openAndVerify(bytes);
  } catch (error) {
    if (error instanceof PopefError) {
      assert.equal(error.file, 'damaged.popef');
      return;
    }
    assert.fail(`${what}: expected a PopefError, got ${String(error)}`);
  }
  assert.fail(`${what}: damaged bytes were accepted`);
}

// Single-file fixtures that open cleanly on their own.
const valid = (await fixtureManifest()).filter((f) => f.expect.ok && f.with === undefined && f.expect.models > 0);

describe('truncation at every byte offset', () => {
  for (const entry of valid) {
    it(`${entry.path}: every proper prefix gives a typed error`, async () => {
      const bytes = new Uint8Array(await readFile(fixture(entry.path)));
      for (let cut = 0; cut < bytes.byteLength; cut++) {
        await expectTypedError(bytes.subarray(0, cut), `cut at ${cut}`);
      }
    });
  }
});

describe('single-byte changes, with verification', () => {
  for (const path of ['seed/executable.popef', 'compressed/executable.popef', 'weights/executable.popef', 'feed/executable.popef']) {
    it(`${path}: every byte changed (two ways) is reported`, async () => {
      const original = new Uint8Array(await readFile(fixture(path)));
      for (let at = 0; at < original.byteLength; at++) {
        for (const mask of [0x01, 0xff]) {
          const bytes = original.slice();
          bytes[at] = (bytes[at] ?? 0) ^ mask;
          await expectTypedError(bytes, `byte ${at} ^ ${mask}`);
        }
      }
    });
  }
});

describe('files shorter than one blob header', () => {
  it('are no PopEF at all unless they begin as the signature does, and then they are truncated', async () => {
    const code = async (bytes: Uint8Array): Promise<string> => {
      try {
        await openAndVerify(bytes);
      } catch (error) {
        if (error instanceof PopefError) return error.code;
        throw error;
      }
      return 'accepted';
    };
    const popef = new Uint8Array(await readFile(fixture('mnist/executable.popef')));
    assert.equal(await code(new TextEncoder().encode('hello\n')), 'E_NOT_POPEF');
    assert.equal(await code(new TextEncoder().encode('name: "mnist"\nbackend: "poplar"\n')), 'E_NOT_POPEF');
    for (const cut of [1, 5, 8, 40, 63]) assert.equal(await code(popef.subarray(0, cut)), 'E_TRUNCATED', `cut at ${cut}`);
    const wrongSecond = popef.slice(0, 20);
    wrongSecond[1] = (wrongSecond[1] ?? 0) ^ 0xff;
    assert.equal(await code(wrongSecond), 'E_NOT_POPEF');
  });
});

describe('decodeHeader given fewer bytes than a header', () => {
  it('refuses them as truncated, naming the offset, before reading a field (the reader never passes fewer; other callers may)', async () => {
    const popef = new Uint8Array(await readFile(fixture('mnist/executable.popef')));
    for (const cut of [8, 40, HEADER_SIZE - 1]) {
      assert.throws(
        () => decodeHeader(popef.subarray(0, cut), 'short.popef', 128, false),
        (error: unknown) =>
          error instanceof PopefError &&
          error.code === 'E_TRUNCATED' &&
          error.offset === 128 &&
          error.message === `blob header needs ${HEADER_SIZE} bytes but only ${cut} remain`,
        `cut at ${cut}`,
      );
    }
    assert.equal(decodeHeader(popef.subarray(0, HEADER_SIZE), 'whole.popef', 0, true).totalSize > HEADER_SIZE, true);
  });
});

describe('a blob header whose 64-bit size no JS number holds', () => {
  it('is refused as E_LIMIT at the field, with a valid header CRC (not mistaken for damage)', async () => {
    const { crc32 } = await import('node:zlib');
    const bytes = new Uint8Array(await readFile(fixture('mnist/executable.popef')));
    const view = new DataView(bytes.buffer, bytes.byteOffset, 64);
    // Total blob size (offset 32): 2^53, one past Number.MAX_SAFE_INTEGER.
    view.setUint32(32, 0, true);
    view.setUint32(36, 0x200000, true);
    view.setUint32(60, crc32(bytes.subarray(0, 60)), true);
    await assert.rejects(ModelSet.open([new MemorySource(bytes, 'huge.popef')]), (error: unknown) => {
      assert.ok(error instanceof PopefError);
      assert.equal(error.code, 'E_LIMIT');
      assert.equal(error.offset, 32);
      assert.equal(error.field, 'total blob size');
      assert.match(error.message, /total blob size is 9007199254740992, larger than any file this reader can address/);
      return true;
    });
  });
});
