import type { ByteSource } from './byte-source.js';
import { checkRange } from './range-check.js';

/** A ByteSource over bytes already in memory (tests, small buffers). */
export class MemorySource implements ByteSource {
  readonly name: string;
  readonly size: number;
  private readonly bytes: Uint8Array;

  constructor(bytes: Uint8Array, name = '<memory>') {
    this.bytes = bytes;
    this.name = name;
    this.size = bytes.byteLength;
  }

  read(offset: number, length: number, field: string): Promise<Uint8Array> {
    return new Promise((resolve) => {
      checkRange(this.name, this.size, offset, length, field);
      resolve(this.bytes.subarray(offset, offset + length));
    });
  }

  peek(offset: number, length: number, field: string): Uint8Array {
    checkRange(this.name, this.size, offset, length, field);
    return this.bytes.subarray(offset, offset + length);
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
