import { ErrorCode, PopefError } from '../errors.js';
import { MAX_READ_CHUNK, type ByteSource } from './byte-source.js';
import { checkRange } from './range-check.js';

/**
 * A ByteSource over a Blob: in a browser, a File the user picked or dropped,
 * read by slices so that opening a multi-gigabyte model reads its headers
 * and metadata only, as FileSource does on disk. Node 20 has Blob too, so
 * the same class is tested there.
 */
export class BlobSource implements ByteSource {
  readonly size: number;
  private closed = false;

  constructor(
    private readonly blob: Blob,
    readonly name: string,
  ) {
    this.size = blob.size;
  }

  async read(offset: number, length: number, field: string): Promise<Uint8Array> {
    if (this.closed) throw new PopefError(ErrorCode.Io, `${this.name} is closed`, { file: this.name, field });
    checkRange(this.name, this.size, offset, length, field);
    if (length <= MAX_READ_CHUNK) return await this.slice(offset, length, field);
    const out = new Uint8Array(length);
    for (let done = 0; done < length; done += MAX_READ_CHUNK) {
      out.set(await this.slice(offset + done, Math.min(MAX_READ_CHUNK, length - done), field), done);
    }
    return out;
  }

  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }

  private async slice(offset: number, length: number, field: string): Promise<Uint8Array> {
    let bytes: ArrayBuffer;
    try {
      bytes = await this.blob.slice(offset, offset + length).arrayBuffer();
    } catch (error) {
      // A File the user changed or removed after picking it can no longer be read.
      throw new PopefError(ErrorCode.Io, `cannot read ${field} of ${this.name}: ${(error as Error).message}`, {
        file: this.name,
        offset,
        field,
        suggestion: 'open the file again',
      });
    }
    if (bytes.byteLength !== length) {
      throw new PopefError(ErrorCode.Truncated, `${this.name} changed while it was read: ${field} got ${bytes.byteLength} of ${length} bytes`, {
        file: this.name,
        offset,
        field,
        suggestion: 'open the file again',
      });
    }
    return new Uint8Array(bytes);
  }
}
