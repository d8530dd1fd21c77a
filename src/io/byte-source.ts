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
  /** Releases the underlying handle; further reads fail. Idempotent. */
  close(): Promise<void>;
}

/** Largest single read the sources perform; bigger ranges are read in pieces. */
export const MAX_READ_CHUNK = 16 * 1024 * 1024;
