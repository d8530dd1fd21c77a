import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { readNpy } from '../../src/run/tensor-io/npy.js';
import { inTempDir } from '../helpers.js';

/**
 * .npy headers a hostile or odd writer makes, each read as NumPy reads it
 * (numpy.lib.format: the header is a Python literal; a key given twice keeps
 * its last value; shape must be a tuple of ints; a header over 10,000 bytes
 * is refused). NumPy itself (.ci/run installs it) is the oracle.
 */

const PYTHON = process.env.POPEF_PYTHON ?? '/usr/bin/python3';

function npy(dict: string, data: Uint8Array): Buffer {
  const total = Math.ceil((10 + dict.length + 1) / 64) * 64;
  const text = `${dict.padEnd(total - 11, ' ')}\n`;
  const head = Buffer.alloc(10);
  Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0]).copy(head);
  head.writeUInt16LE(text.length, 8);
  return Buffer.concat([head, Buffer.from(text, 'latin1'), data]);
}

/** What NumPy makes of the file: "dtype shape" or "refused". */
async function numpyReads(bytes: Buffer): Promise<string> {
  return inTempDir(async (dir) => {
    const path = join(dir, 'x.npy');
    await writeFile(path, bytes);
    const script =
      'import sys, numpy\ntry:\n  a = numpy.load(sys.argv[1])\n  print(a.dtype.str, list(a.shape))\nexcept Exception:\n  print("refused")';
    return execFileSync(PYTHON, ['-c', script, path], { encoding: 'utf8' }).trim();
  });
}

describe('.npy headers as NumPy reads them', () => {
  it('duplicate descr keys: the last one wins, as in numpy', async () => {
    const bytes = npy("{'descr': '<f8', 'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", new Uint8Array(8));
    const t = readNpy(bytes, 'dup.npy');
    assert.equal(t.dtype, 'F32');
    assert.deepEqual(t.shape, [2]);
    assert.equal(await numpyReads(bytes), '<f4 [2]');
  });

  it('a float shape (1.0,) is refused, as numpy refuses it', async () => {
    const bytes = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1.0,), }", new Uint8Array(4));
    assert.throws(() => readNpy(bytes, 'float-shape.npy'), /not a usable \.npy file: shape is not a tuple of sizes/);
    assert.equal(await numpyReads(bytes), 'refused');
  });

  it('a 10k-character header is refused without being echoed whole', async () => {
    const bytes = npy(`{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': '${'A'.repeat(10_000)}'}`, new Uint8Array(4));
    assert.throws(
      () => readNpy(bytes, 'long.npy'),
      (error: Error) => /the header is 10\d{3} bytes, more than the 10000 NumPy reads/.test(error.message) && error.message.length < 300,
    );
    assert.equal(await numpyReads(bytes), 'refused');
  });

  it('a header of odd keys is quoted only in part', () => {
    const bytes = npy(`{'descr': '<f4', 'fortran_order': False, 'shape': (1,), '${'B'.repeat(5000)}': 1}`, new Uint8Array(4));
    assert.throws(
      () => readNpy(bytes, 'keys.npy'),
      (error: Error) => /NumPy wants exactly descr, fortran_order and shape/.test(error.message) && error.message.length < 400,
    );
  });

  it('the headers numpy.save writes still read', async () => {
    const bytes = npy("{'descr': '<i8', 'fortran_order': False, 'shape': (2, 3), }", new Uint8Array(48));
    assert.deepEqual(readNpy(bytes, 'ok.npy').shape, [2, 3]);
    assert.equal(await numpyReads(bytes), '<i8 [2, 3]');
    const scalar = npy("{'descr': '|u1', 'fortran_order': False, 'shape': (), }", new Uint8Array(1));
    assert.deepEqual(readNpy(scalar, 's.npy').shape, []);
  });
});
