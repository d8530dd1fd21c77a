import { closeSync, fstatSync, openSync, readSync, writeSync } from 'node:fs';
import { RequestError, invalidArg } from './status.js';

/**
 * The shared-memory regions a client registered, as Triton's
 * SharedMemoryManager keeps them (server r24.10, src/shared_memory_manager.cc),
 * with its checks and messages. A system region is a POSIX shared-memory
 * object (shm_open's name, so /dev/shm/<key> on Linux), held open from
 * registration to unregistration and read and written at positions: Node
 * cannot map it, and a file descriptor keeps the object alive after the
 * client unlinks it, as Triton's mapping does. CUDA regions are answered as
 * Triton's GPU build answers them on a machine without GPUs (the server
 * that pytriton bundles): opening the CUDA IPC handle fails, so nothing can
 * be registered, status lists none and unregistering finds nothing to do.
 */

export interface SystemRegionStatus {
  readonly name: string;
  readonly key: string;
  readonly offset: number;
  readonly byteSize: number;
}

export interface CudaRegionStatus {
  readonly name: string;
  readonly deviceId: number;
  readonly byteSize: number;
}

interface SystemRegion extends SystemRegionStatus {
  readonly fd: number;
  /** Requests holding the region now (Triton refuses to unregister it meanwhile). */
  uses: number;
}

/** A slice of a registered region a request reads an input from or writes an output to. */
export interface RegionSlice {
  readonly region: string;
  readonly offset: number;
  readonly byteSize: number;
}

/** Where POSIX shm_open(name) puts its object on Linux; undefined for a name it refuses (EINVAL). */
function shmPath(key: string): string | undefined {
  const name = key.replace(/^\/+/, '');
  if (name === '' || name.includes('/') || name === '.' || name === '..') return undefined;
  return `/dev/shm/${name}`;
}

export class SharedMemoryRegistry {
  private readonly regions = new Map<string, SystemRegion>();

  registerSystem(name: string, key: string, offset: number, byteSize: number): void {
    if (this.regions.has(name)) throw new RequestError('ALREADY_EXISTS', `shared memory region '${name}' already in manager`);
    // Triton reuses the descriptor of a key already registered, which it closed after mapping: its fstat fails.
    if ([...this.regions.values()].some((r) => r.key === key)) throw new RequestError('INTERNAL', `Invalid shared memory region: '${key}'`);
    const path = shmPath(key);
    let fd: number;
    try {
      if (path === undefined) throw new Error('EINVAL');
      fd = openSync(path, 'r+');
    } catch {
      throw new RequestError('INTERNAL', `Unable to open shared memory region: '${key}'`);
    }
    let size: number;
    try {
      size = fstatSync(fd).size;
    } catch {
      closeSync(fd);
      throw new RequestError('INTERNAL', `Invalid shared memory region: '${key}'`);
    }
    if (offset + byteSize > size) {
      closeSync(fd);
      throw invalidArg(`failed to register shared memory region '${name}': invalid args`);
    }
    this.regions.set(name, { name, key, offset, byteSize, fd, uses: 0 });
  }

  /** Every region (name ''), or the one named. */
  systemStatus(name: string): SystemRegionStatus[] {
    const view = (r: SystemRegion): SystemRegionStatus => ({ name: r.name, key: r.key, offset: r.offset, byteSize: r.byteSize });
    if (name === '') return [...this.regions.values()].map(view);
    const region = this.regions.get(name);
    if (region === undefined) throw new RequestError('NOT_FOUND', `Unable to find system shared memory region: '${name}'`);
    return [view(region)];
  }

  /** Unregisters the region named, or every one (name ''); an unknown name is no error, as in Triton. */
  unregisterSystem(name: string): void {
    if (name !== '') {
      this.unregisterOne(name);
      return;
    }
    const failed: string[] = [];
    for (const region of [...this.regions.keys()]) {
      try {
        this.unregisterOne(region);
      } catch {
        failed.push(region);
      }
    }
    if (failed.length > 0)
      throw new RequestError('INTERNAL', `Failed to unregister the following system shared memory regions: ${failed.map((f) => `${f} ,`).join('')}`);
  }

  private unregisterOne(name: string): void {
    const region = this.regions.get(name);
    if (region === undefined) return;
    if (region.uses > 0) throw new RequestError('INTERNAL', `Cannot unregister shared memory region '${name}', it is currently in use.`);
    closeSync(region.fd);
    this.regions.delete(name);
  }

  cudaStatus(name: string): CudaRegionStatus[] {
    if (name === '') return [];
    throw new RequestError('NOT_FOUND', `Unable to find cuda shared memory region: '${name}'`);
  }

  registerCuda(): never {
    throw invalidArg('failed to register shared memory region: invalid args');
  }

  /** Nothing is ever registered as CUDA memory here: unregistering one region or all succeeds, doing nothing. */
  unregisterCuda(): void {
    return undefined;
  }

  /**
   * The region's checks for a slice a request names (GetMemoryInfo). Triton
   * compares with size_t arithmetic: the end of a slice is offset + size - 1,
   * so an empty slice at offset 0 wraps around and is refused.
   */
  check(slice: RegionSlice): void {
    const region = this.regions.get(slice.region);
    if (region === undefined) throw new RequestError('NOT_FOUND', `Unable to find shared memory region: '${slice.region}'`);
    const end = region.offset + (region.byteSize > 0 ? region.byteSize - 1 : 0);
    if (slice.offset > end) throw invalidArg(`Invalid offset for shared memory region: '${slice.region}'`);
    const last = slice.offset + slice.byteSize - 1;
    if (last < 0 || last > end) throw invalidArg(`Invalid offset + byte size for shared memory region: '${slice.region}'`);
  }

  /** The bytes of a checked slice. */
  read(slice: RegionSlice): Uint8Array {
    this.check(slice);
    const region = this.regionOf(slice);
    const out = Buffer.allocUnsafe(slice.byteSize);
    let done = 0;
    while (done < out.byteLength) {
      const n = readSync(region.fd, out, done, out.byteLength - done, this.position(region, slice) + done);
      if (n === 0) {
        out.fill(0, done);
        break;
      }
      done += n;
    }
    return out;
  }

  /** Writes an output into a checked slice (the caller checked it holds the data). */
  write(slice: RegionSlice, data: Uint8Array): void {
    const region = this.regionOf(slice);
    let done = 0;
    while (done < data.byteLength) done += writeSync(region.fd, data, done, data.byteLength - done, this.position(region, slice) + done);
  }

  /** Holds the regions of a request until release(), so they cannot be unregistered meanwhile. */
  hold(slices: readonly RegionSlice[]): () => void {
    const held = slices.map((s) => this.regions.get(s.region)).filter((r): r is SystemRegion => r !== undefined);
    for (const r of held) r.uses += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      for (const r of held) r.uses -= 1;
    };
  }

  private regionOf(slice: RegionSlice): SystemRegion {
    const region = this.regions.get(slice.region);
    if (region === undefined) throw new RequestError('NOT_FOUND', `Unable to find shared memory region: '${slice.region}'`);
    return region;
  }

  /**
   * The position in the shared-memory object: the registered offset plus the
   * request's. (Triton maps the object from the registered offset and then
   * adds that offset a second time; clients register at offset 0, where the
   * two agree.)
   */
  private position(region: SystemRegion, slice: RegionSlice): number {
    return region.offset + slice.offset;
  }

  close(): void {
    for (const region of this.regions.values()) closeSync(region.fd);
    this.regions.clear();
  }
}
