// The shared-memory region registry on its own: Triton's checks and
// messages (server r24.10, shared_memory_manager.cc) on real /dev/shm
// objects. The same cases against the real tritonserver are in
// tritonclient.test.ts (protocol_cases.py).
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { SharedMemoryRegistry } from '../../src/serve/shared-memory.js';
import { RequestError } from '../../src/serve/status.js';

const hasShm = existsSync('/dev/shm');

function refusal(fn: () => unknown): [string, string] {
  try {
    fn();
  } catch (error) {
    if (error instanceof RequestError) return [error.status, error.message];
    throw error;
  }
  return ['OK', ''];
}

describe('the shared-memory registry', { skip: hasShm ? false : 'no /dev/shm' }, () => {
  const key = `/popef_test_${randomUUID().slice(0, 8)}`;
  const path = `/dev/shm${key}`;
  const small = `${key}_small`;
  let shm: SharedMemoryRegistry;

  before(async () => {
    await writeFile(path, Buffer.from(Array.from({ length: 64 }, (_, i) => i)));
    await writeFile(`/dev/shm${small}`, Buffer.alloc(8));
    shm = new SharedMemoryRegistry();
  });

  after(async () => {
    shm.close();
    await rm(path, { force: true });
    await rm(`/dev/shm${small}`, { force: true });
  });

  it('registers a region in bounds, refuses one out of bounds, a name twice, an unknown key, and a key already held', () => {
    assert.deepEqual(
      refusal(() => shm.registerSystem('r', key, 16, 32)),
      ['OK', ''],
    );
    assert.deepEqual(
      refusal(() => shm.registerSystem('r', key, 0, 8)),
      ['ALREADY_EXISTS', "shared memory region 'r' already in manager"],
    );
    assert.deepEqual(
      refusal(() => shm.registerSystem('s', key, 0, 8)),
      ['INTERNAL', `Invalid shared memory region: '${key}'`],
    );
    assert.deepEqual(
      refusal(() => shm.registerSystem('big', small, 4, 5)),
      ['INVALID_ARG', "failed to register shared memory region 'big': invalid args"],
    );
    assert.deepEqual(
      refusal(() => shm.registerSystem('t', '/popef_no_such_key', 0, 8)),
      ['INTERNAL', "Unable to open shared memory region: '/popef_no_such_key'"],
    );
    assert.deepEqual(
      refusal(() => shm.registerSystem('u', 'a/b', 0, 8)),
      ['INTERNAL', "Unable to open shared memory region: 'a/b'"],
    );
    assert.deepEqual(shm.systemStatus(''), [{ name: 'r', key, offset: 16, byteSize: 32 }]);
    assert.deepEqual(
      refusal(() => shm.systemStatus('x')),
      ['NOT_FOUND', "Unable to find system shared memory region: 'x'"],
    );
  });

  it('reads and writes slices at the registered offset, with the checks of GetMemoryInfo', async () => {
    assert.deepEqual([...shm.read({ region: 'r', offset: 4, byteSize: 4 })], [20, 21, 22, 23]);
    shm.write({ region: 'r', offset: 0, byteSize: 2 }, Uint8Array.of(200, 201));
    assert.deepEqual([...(await readFile(path)).subarray(15, 19)], [15, 200, 201, 18]);
    assert.deepEqual(
      refusal(() => shm.check({ region: 'nosuch', offset: 0, byteSize: 1 })),
      ['NOT_FOUND', "Unable to find shared memory region: 'nosuch'"],
    );
    // Triton compares with the region's end at offset + size - 1 (its registration offset included, a quirk kept).
    assert.deepEqual(
      refusal(() => shm.check({ region: 'r', offset: 48, byteSize: 1 })),
      ['INVALID_ARG', "Invalid offset for shared memory region: 'r'"],
    );
    assert.deepEqual(
      refusal(() => shm.check({ region: 'r', offset: 40, byteSize: 8 })),
      ['OK', ''],
    );
    assert.deepEqual(
      refusal(() => shm.check({ region: 'r', offset: 40, byteSize: 9 })),
      ['INVALID_ARG', "Invalid offset + byte size for shared memory region: 'r'"],
    );
    // size_t arithmetic: an empty slice at offset 0 wraps around.
    assert.deepEqual(
      refusal(() => shm.check({ region: 'r', offset: 0, byteSize: 0 })),
      ['INVALID_ARG', "Invalid offset + byte size for shared memory region: 'r'"],
    );
  });

  it('refuses to unregister a region in use, lists what it could not unregister, and takes an unknown name', () => {
    const release = shm.hold([{ region: 'r', offset: 0, byteSize: 4 }]);
    assert.deepEqual(
      refusal(() => shm.unregisterSystem('r')),
      ['INTERNAL', "Cannot unregister shared memory region 'r', it is currently in use."],
    );
    assert.deepEqual(
      refusal(() => shm.unregisterSystem('')),
      ['INTERNAL', 'Failed to unregister the following system shared memory regions: r ,'],
    );
    release();
    assert.deepEqual(
      refusal(() => shm.unregisterSystem('nosuch')),
      ['OK', ''],
    );
    assert.deepEqual(
      refusal(() => shm.unregisterSystem('')),
      ['OK', ''],
    );
    assert.deepEqual(shm.systemStatus(''), []);
  });

  it('answers CUDA calls as a GPU build on a host without GPUs', () => {
    assert.deepEqual(shm.cudaStatus(''), []);
    assert.deepEqual(
      refusal(() => shm.cudaStatus('g')),
      ['NOT_FOUND', "Unable to find cuda shared memory region: 'g'"],
    );
    assert.deepEqual(
      refusal(() => shm.registerCuda()),
      ['INVALID_ARG', 'failed to register shared memory region: invalid args'],
    );
  });
});
