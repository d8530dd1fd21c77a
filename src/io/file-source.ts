import type { FileHandle } from 'node:fs/promises';
import { ErrorCode, PopefError, ioError } from '../errors.js';
import { MAX_READ_CHUNK, type ByteSource } from './byte-source.js';
import { openRegularFile } from './local-file.js';
import { checkRange } from './range-check.js';

/**
 * A ByteSource over a local file, read by offset through one FileHandle.
 * The size is taken once at open: a file that shrinks under us yields a
 * typed truncation error rather than short reads.
 */
export class FileSource implements ByteSource {
  readonly name: string;
  readonly size: number;
  private handle: FileHandle | undefined;

  private constructor(name: string, handle: FileHandle, size: number) {
    this.name = name;
    this.handle = handle;
    this.size = size;
  }

  /** Opens `path`; `name` (default: the path) is what messages call the file. */
  static async open(path: string, name = path): Promise<FileSource> {
    const { handle, size } = await openRegularFile(path, name, 'the file');
    return new FileSource(name, handle, size);
  }

  async read(offset: number, length: number, field: string): Promise<Uint8Array> {
    checkRange(this.name, this.size, offset, length, field);
    const handle = this.handle;
    if (handle === undefined) throw new PopefError(ErrorCode.Io, 'file already closed', { file: this.name });
    const out = new Uint8Array(length);
    let done = 0;
    while (done < length) {
      const want = Math.min(MAX_READ_CHUNK, length - done);
      let bytesRead: number;
      try {
        ({ bytesRead } = await handle.read(out, done, want, offset + done));
      } catch (error) {
        throw ioError(error, this.name, `read ${field}`);
      }
      if (bytesRead === 0) {
        // The file shrank after we measured it.
        checkRange(this.name, offset + done, offset, length, field);
      }
      done += bytesRead;
    }
    return out;
  }

  async close(): Promise<void> {
    const handle = this.handle;
    this.handle = undefined;
    if (handle !== undefined) await handle.close();
  }
}
