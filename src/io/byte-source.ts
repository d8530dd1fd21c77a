/**
 * A random-access source of bytes. The format layer reads only through this
 * interface, so the same reader works on files, memory and (later) remote
 * ranges, and reads stay lazy: nothing is read that a caller did not ask for.
 */
export interface ByteSource {
  /** A name for messages: the path, or a label for in-memory data. */
  readonly name: string;
  /** Total size in bytes. */
  readonly size: number;
  /**
   * Exactly `length` bytes from `offset`. Throws a PopefError (code
   * E_TRUNCATED) naming `field` if the source ends before that; never
   * returns a short or zero-filled buffer.
   */
  read(offset: number, length: number, field: string): Promise<Uint8Array>;
  /**
   * The bytes read() would give, when the source holds them already (in
   * memory, or in a file's read-ahead), without waiting for a promise;
   * undefined when they would have to be read. A view, valid until the
   * next read or the source's close (a file source's memory then serves
   * another file): a caller copies what it keeps. Throws as read() does for a
   * range past the end. Optional: a reader falls back on read(). Why it
   * exists: the reader walks a small file's headers and descriptors in
   * some thirty reads, and before V8 optimises the code each awaited
   * promise costs about a microsecond (validate opens one file per model:
   * issue 26).
   */
  peek?(offset: number, length: number, field: string): Uint8Array | undefined;
  /** Releases the underlying handle; further reads fail. Idempotent. */
  close(): Promise<void>;
}

/** Largest single read the sources perform; bigger ranges are read in pieces. */
export const MAX_READ_CHUNK = 16 * 1024 * 1024;
