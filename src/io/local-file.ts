// fs.promises, not node:fs/promises: Node loads that module (about 1.5 ms, with its dependencies) on first use of the
// getter, and the CLI's bundle reads it where it is used, so a validate that never opens a file asynchronously never loads it.
import { closeSync, constants, fstatSync, openSync, promises as fsPromises, read, readSync, statSync, type Stats } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { ErrorCode, PopefError, ioError } from '../errors.js';

/**
 * The one way the library opens a local file it reads whole or by offset.
 *
 * Two hostile inputs shape it. A FIFO blocks open(2) until a writer comes,
 * on a libuv thread that no signal can interrupt, so files are opened with
 * O_NONBLOCK (which makes open return at once for a FIFO and changes nothing
 * for a regular file) and anything that is not a regular file is refused
 * before a byte is read. A device such as /dev/zero has no size and never
 * ends, so every whole-file read has a named limit, checked against the
 * size fstat reports before anything is allocated; no more than that size
 * is ever read, so a file that grows meanwhile cannot get past it.
 *
 * Small files are read with synchronous calls. An asynchronous open, fstat,
 * read and close are four round trips through libuv's thread pool, each a
 * wake-up of a pool thread and of the event loop: on a loaded machine they
 * cost far more than the system calls themselves (validate of 1,000 models
 * spent most of its time waiting on them: issue 26). A synchronous call on a
 * file of a few KiB in the page cache returns in microseconds. Files above
 * SYNC_READ_LIMIT are still read through the pool, so a 4 GiB input does
 * not stall the event loop.
 */

/** Whole-file reads up to this size are synchronous (see above). */
export const SYNC_READ_LIMIT = 1024 * 1024;

/** Limits on files read whole, by what they hold. Documented in the README's limits table. */
export const FILE_LIMITS = {
  /** config.pbtxt: Triton sets none; this is far above any real configuration. */
  config: 256 * 1024 ** 2,
  /** name_map.json, pack manifests, label files. */
  json: 256 * 1024 ** 2,
  /** A model input file (npy, json, raw, png). */
  input: 4 * 1024 ** 3,
  /** An ONNX reference graph. onnxruntime's own protobuf limit is 2 GiB. */
  graph: 2 * 1024 ** 3,
} as const;

function kindOf(stat: Pick<Stats, 'isDirectory' | 'isFIFO' | 'isCharacterDevice' | 'isBlockDevice' | 'isSocket'>): string {
  if (stat.isDirectory()) return 'a directory';
  if (stat.isFIFO()) return 'a FIFO (named pipe)';
  if (stat.isCharacterDevice()) return 'a character device';
  if (stat.isBlockDevice()) return 'a block device';
  if (stat.isSocket()) return 'a socket';
  return 'not a regular file';
}

export interface OpenedFile {
  readonly handle: FileHandle;
  readonly size: number;
}

function notRegular(
  stat: Pick<Stats, 'isDirectory' | 'isFIFO' | 'isCharacterDevice' | 'isBlockDevice' | 'isSocket'>,
  name: string,
  what: string,
): PopefError {
  return new PopefError(ErrorCode.Io, `cannot read ${what}: it is ${kindOf(stat)}, not a regular file`, {
    file: name,
    suggestion: stat.isDirectory()
      ? 'give the path of a file, not a directory'
      : `copy the data into a regular file first${what === 'the file' ? ', or pipe it to standard input as -' : ''}`,
  });
}

/**
 * Opens a regular file for reading without blocking on FIFOs. `name` is what
 * messages call it, `what` what it should be ("the model", "config.pbtxt").
 */
export async function openRegularFile(path: string, name: string, what: string): Promise<OpenedFile> {
  let handle: FileHandle;
  try {
    handle = await fsPromises.open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    throw ioError(error, name, `open ${what}`);
  }
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) throw notRegular(stat, name, what);
    return { handle, size: stat.size };
  } catch (error) {
    await handle.close();
    if (error instanceof PopefError) throw error;
    throw ioError(error, name, `read ${what}`);
  }
}

/** A regular file open by descriptor, with the size fstat gave at open. */
export interface OpenedDescriptor {
  readonly fd: number;
  readonly size: number;
}

/** open(2) for reading, without blocking on a FIFO (see above), synchronously: the descriptor is the caller's to close. */
function openNonBlocking(path: string, name: string, what: string): number {
  try {
    return openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    throw ioError(error, name, `open ${what}`);
  }
}

/** fstat(2) of a descriptor just opened: its size, or a refusal if it is not a regular file (the descriptor is closed then). */
export function measureRegular(fd: number, name: string, what: string): number {
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw notRegular(stat, name, what);
    return stat.size;
  } catch (error) {
    closeSync(fd);
    if (error instanceof PopefError) throw error;
    throw ioError(error, name, `read ${what}`);
  }
}

/** Whether `path` is a directory (following links); false where it cannot be stat'ed. */
export function isDirectorySync(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** openRegularFile with synchronous calls (one open, one fstat): the descriptor is the caller's to close (closeSync). */
export function openRegularDescriptor(path: string, name: string, what: string): OpenedDescriptor {
  const fd = openNonBlocking(path, name, what);
  return { fd, size: measureRegular(fd, name, what) };
}

/**
 * What the first read of a file takes when the caller's directory listing
 * already said it is a regular file (not a link). A file shorter than this
 * is then known whole, its size included, from one open and one read: no
 * fstat, which was one system call in four for each small file validate
 * reads (issue 26 asks for one open and one read). A file this long or
 * longer is measured with fstat as any other.
 */
export const LISTED_FIRST_READ = 64 * 1024;

/** The first read's buffer: reads are synchronous, so one per thread serves every call. */
const firstRead = Buffer.allocUnsafe(LISTED_FIRST_READ);

/**
 * A file the caller's listing called regular, opened and read from its
 * start: `head` holds its first bytes, up to LISTED_FIRST_READ, and `whole`
 * says whether that is all of it (a shorter read). `head` is a copy, unless
 * the caller gives its own buffer `into` (LISTED_FIRST_READ bytes long) to
 * read into: `head` is then a view of it. A file not known whole keeps the
 * descriptor `fd` open for the caller to measure and read on from the end
 * of `head`, which it need not read again. Should the entry have been
 * replaced since it was listed, nothing blocks and nothing else is read:
 * open does not wait for a FIFO's writer (O_NONBLOCK), and reading a FIFO
 * at an offset fails (ESPIPE), as reading a directory does (EISDIR).
 */
export function openListedFile(
  path: string,
  name: string,
  what: string,
  into?: Buffer,
): { readonly fd: number; readonly head: Buffer; readonly whole: boolean } {
  const fd = openNonBlocking(path, name, what);
  const target = into ?? firstRead;
  let length: number;
  try {
    length = readSync(fd, target, 0, LISTED_FIRST_READ, 0);
  } catch (error) {
    closeSync(fd);
    throw ioError(error, name, `read ${what}`);
  }
  // A read of a regular file returns less than was asked only at its end.
  const head = into === undefined ? Buffer.from(firstRead.subarray(0, length)) : into.subarray(0, length);
  return { fd, head, whole: length < LISTED_FIRST_READ };
}

/** Reads up to `length` bytes at `position` into `out` at `at`: synchronously when `sync`, else through the pool. */
export function readDescriptor(fd: number, out: Uint8Array, at: number, length: number, position: number, sync: boolean): Promise<number> | number {
  if (sync) return readSync(fd, out, at, length, position);
  return new Promise((resolve, reject) => {
    read(fd, out, at, length, position, (error, bytesRead) => (error === null ? resolve(bytesRead) : reject(error)));
  });
}

function overLimit(name: string, what: string, size: number, limit: number): PopefError {
  return new PopefError(ErrorCode.LimitExceeded, `${what} is ${size} bytes or more, over the limit of ${limit} bytes`, {
    file: name,
    suggestion: 'check that this is the file you meant',
  });
}

export interface ReadWholeOptions {
  /** What messages call the file (default: the path). */
  readonly name?: string;
  /** What the file should be, for messages ("config.pbtxt", "input \"x\""). */
  readonly what: string;
  readonly limit: number;
  /** The caller's directory listing said the file is a regular file, not a link: see LISTED_FIRST_READ. */
  readonly listedRegular?: boolean;
}

/**
 * Reads a regular file whole, refusing one larger than `limit` before
 * allocating it: one open, one fstat, one read and one close for a file of
 * up to SYNC_READ_LIMIT bytes; with `listedRegular`, a file shorter than
 * LISTED_FIRST_READ takes no fstat.
 */
export async function readRegularFile(path: string, options: ReadWholeOptions): Promise<Buffer> {
  const name = options.name ?? path;
  let fd: number;
  let head: Buffer | undefined;
  if (options.listedRegular === true) {
    const listed = openListedFile(path, name, options.what);
    if (listed.whole) {
      closeSync(listed.fd);
      if (listed.head.byteLength > options.limit) throw overLimit(name, options.what, listed.head.byteLength, options.limit);
      return listed.head;
    }
    fd = listed.fd;
    head = listed.head;
  } else {
    fd = openNonBlocking(path, name, options.what);
  }
  const size = measureRegular(fd, name, options.what);
  try {
    if (size > options.limit) throw overLimit(name, options.what, size, options.limit);
    // The size fstat gave, and no more: a file that grows meanwhile is read as it was, within the limit.
    const out = Buffer.allocUnsafe(size);
    const sync = size <= SYNC_READ_LIMIT;
    // What the listed file's first read already holds is not read again.
    let done = head === undefined ? 0 : head.copy(out, 0, 0, Math.min(size, head.byteLength));
    while (done < size) {
      let bytesRead: number;
      try {
        bytesRead = await readDescriptor(fd, out, done, size - done, done, sync);
      } catch (error) {
        throw ioError(error, name, `read ${options.what}`);
      }
      if (bytesRead === 0) break;
      done += bytesRead;
    }
    return done === size ? out : out.subarray(0, done);
  } finally {
    closeSync(fd);
  }
}

/** readRegularFile, decoded as UTF-8. */
export async function readRegularText(path: string, options: ReadWholeOptions): Promise<string> {
  return (await readRegularFile(path, options)).toString('utf8');
}

/**
 * Resolves `file` against `base` and refuses a path that leaves `base`:
 * absolute paths, `..` steps out, and symbolic links whose target lies
 * outside. `name` and `what` are for messages. The file must exist.
 */
export async function resolveInside(base: string, file: string, name: string, what: string): Promise<string> {
  const refuse = (why: string): PopefError =>
    new PopefError(ErrorCode.Manifest, `${what} ${JSON.stringify(file)} ${why}`, {
      file: name,
      suggestion: "keep payload files in the manifest's directory or below it, and name them by relative paths",
    });
  if (isAbsolute(file)) throw refuse('is an absolute path');
  const lexical = resolve(base, file);
  const escapes = (root: string, target: string): boolean => {
    const rel = relative(root, target);
    return rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel);
  };
  if (escapes(resolve(base), lexical)) throw refuse("points outside the manifest's directory");
  let real: string;
  let realBase: string;
  try {
    [real, realBase] = await Promise.all([fsPromises.realpath(lexical), fsPromises.realpath(base)]);
  } catch (error) {
    throw ioError(error, name, `read ${what} ${JSON.stringify(file)}`);
  }
  if (escapes(realBase, real)) throw refuse("is a symbolic link to a file outside the manifest's directory");
  return real;
}
