import { closeSync } from 'node:fs';
import { ErrorCode, PopefError, ioError } from '../errors.js';
import { MAX_READ_CHUNK, type ByteSource } from './byte-source.js';
import { LISTED_FIRST_READ, measureRegular, openListedFile, openRegularDescriptor, readDescriptor } from './local-file.js';
import { checkRange } from './range-check.js';

/**
 * The bytes read at open, from offset 0: a small PopEF (the scaffolded
 * MNIST model is 33 KiB) is then read with one read, and a large one's
 * first headers, descriptors and metadata usually lie inside it.
 */
export const OPEN_WINDOW = LISTED_FIRST_READ;

/**
 * What a read that misses the window reads at least: a blob header and its
 * descriptor come together, so the descriptor's read costs nothing more.
 */
export const MISS_WINDOW = 4 * 1024;

/**
 * Open windows of sources already closed, for the next open to read into.
 * validate opens a PopEF file per model, and a new window for each (33 KiB
 * for MNIST) made V8 allocate and collect external memory once per model:
 * at 100,000 models, reusing them took about a tenth off the time (issue
 * 26). A window goes back only from close(), which also drops it from its
 * source, and nothing keeps a view of a window past close: read() gives
 * copies, and peek()'s views are decoded at once (the reader copies what it
 * keeps, decoded-by-bytes.ts). A few are kept: a version's files are open
 * together, and more than that is only memory.
 */
const spareWindows: Buffer[] = [];
const MAX_SPARE_WINDOWS = 4;

const NO_BYTES = new Uint8Array(0);

/**
 * A ByteSource over a local file, read by offset through one descriptor.
 * The size is taken once at open: a file that shrinks under us yields a
 * typed truncation error rather than short reads.
 *
 * Opening a file reads its first OPEN_WINDOW bytes; a later small read
 * outside that window reads MISS_WINDOW bytes from where it starts, and
 * reads inside the current window are served from memory. Reads of up to
 * OPEN_WINDOW bytes are synchronous system calls: walking the headers of a
 * file is a chain of small reads, each of which would otherwise be a round
 * trip through libuv's thread pool (src/io/local-file.ts says why that
 * matters). Larger reads (payloads) go through the pool.
 */
export class FileSource implements ByteSource {
  readonly name: string;
  readonly size: number;
  private fd: number | undefined;
  private window: { readonly offset: number; readonly bytes: Uint8Array };
  /** The buffer of the open window when it is to go back to spareWindows at close. */
  private spare: Buffer | undefined;

  private constructor(name: string, fd: number, size: number) {
    this.name = name;
    this.fd = fd;
    this.size = size;
    this.window = { offset: 0, bytes: NO_BYTES };
  }

  /**
   * Opens `path`; `name` (default: the path) is what messages call the file.
   * With `listedRegular` (the caller's directory listing said it is a
   * regular file, not a link), a file smaller than the window is measured
   * by reading it, without fstat (local-file.ts, LISTED_FIRST_READ).
   */
  static async open(path: string, name = path, options: { readonly listedRegular?: boolean } = {}): Promise<FileSource> {
    if (options.listedRegular === true) {
      const spare = spareWindows.pop() ?? Buffer.allocUnsafeSlow(OPEN_WINDOW);
      const listed = openListedFile(path, name, 'the file', spare);
      const size = listed.whole ? listed.head.byteLength : measureRegular(listed.fd, name, 'the file');
      const source = new FileSource(name, listed.fd, size);
      source.spare = spare;
      // The first read is the window (what fill would read again), as a plain Uint8Array over the same bytes:
      // read() hands out slices, which of a Buffer would be views, not copies. A file that shrank since is cut to its size.
      const head = listed.head;
      source.window = { offset: 0, bytes: new Uint8Array(head.buffer, head.byteOffset, Math.min(size, head.byteLength)) };
      return source;
    }
    const { fd, size } = openRegularDescriptor(path, name, 'the file');
    const source = new FileSource(name, fd, size);
    try {
      await source.fill(0, Math.min(OPEN_WINDOW, size), 'blob header');
    } catch (error) {
      await source.close();
      throw error;
    }
    return source;
  }

  async read(offset: number, length: number, field: string): Promise<Uint8Array> {
    // A copy: a caller may keep what it gets longer than the window lives.
    const held = this.peek(offset, length, field);
    if (held !== undefined) return held.slice();
    if (length <= OPEN_WINDOW) {
      await this.fill(offset, Math.min(Math.max(length, MISS_WINDOW), this.size - offset), field);
      return this.window.bytes.slice(0, length);
    }
    return this.readInto(new Uint8Array(length), offset, field);
  }

  peek(offset: number, length: number, field: string): Uint8Array | undefined {
    checkRange(this.name, this.size, offset, length, field);
    const w = this.window;
    const start = offset - w.offset;
    return start >= 0 && start + length <= w.bytes.byteLength ? w.bytes.subarray(start, start + length) : undefined;
  }

  close(): Promise<void> {
    const fd = this.fd;
    this.fd = undefined;
    if (fd !== undefined) closeSync(fd);
    // Nothing is served from a closed source, so its window can serve the next open.
    this.window = { offset: 0, bytes: NO_BYTES };
    const spare = this.spare;
    this.spare = undefined;
    if (spare !== undefined && spareWindows.length < MAX_SPARE_WINDOWS) spareWindows.push(spare);
    return Promise.resolve();
  }

  /** Replaces the window with `length` bytes from `offset` (the caller checked the range). */
  private async fill(offset: number, length: number, field: string): Promise<void> {
    this.window = { offset, bytes: await this.readInto(new Uint8Array(length), offset, field) };
  }

  private async readInto(out: Uint8Array, offset: number, field: string): Promise<Uint8Array> {
    const fd = this.fd;
    if (fd === undefined) throw new PopefError(ErrorCode.Io, 'file already closed', { file: this.name });
    const length = out.byteLength;
    const sync = length <= OPEN_WINDOW;
    let done = 0;
    while (done < length) {
      const want = Math.min(MAX_READ_CHUNK, length - done);
      let bytesRead: number;
      try {
        bytesRead = await readDescriptor(fd, out, done, want, offset + done, sync);
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
}
