/**
 * Typed errors of the library. Everything below the library boundary throws
 * only these (or lets a programming error escape as a plain Error, which the
 * CLI reports as an internal error). Each carries a stable `code` so that
 * tests, scripts and the CLI's exit-code funnel never match on message text.
 */

export const ErrorCode = {
  /** The bytes are not in the PopEF open layout at all. */
  NotPopef: 'E_NOT_POPEF',
  /** The file ends inside a structure whose size says it should go on. */
  Truncated: 'E_TRUNCATED',
  /** A header, descriptor or size field is inconsistent. */
  BadStructure: 'E_BAD_STRUCTURE',
  /** A blob or layout major version this reader does not know. */
  UnsupportedVersion: 'E_UNSUPPORTED_VERSION',
  /** A count or length from the file exceeds a named limit. */
  LimitExceeded: 'E_LIMIT',
  /** A FlatBuffer (metadata or descriptor) fails structural verification. */
  BadFlatBuffer: 'E_BAD_FLATBUFFER',
  /** Stored bytes do not match their checksum. */
  Checksum: 'E_CHECKSUM',
  /** A compressed payload cannot be decompressed or has the wrong size. */
  Compression: 'E_COMPRESSION',
  /** Blobs are individually valid but do not form a consistent model set. */
  Model: 'E_MODEL',
  /** A value given to the writer or packer is invalid. */
  InvalidInput: 'E_INVALID_INPUT',
  /** A manifest (pack/unpack) fails its schema or refers to missing files. */
  Manifest: 'E_MANIFEST',
  /** A text file (config.pbtxt, JSON) does not parse. */
  Parse: 'E_PARSE',
  /** An execution plugin is not available here (runtime or SDK missing). */
  PluginUnavailable: 'E_PLUGIN_UNAVAILABLE',
  /** An execution plugin failed, broke the protocol, or died. */
  Plugin: 'E_PLUGIN',
  /** An execution plugin did not answer in time and was stopped. */
  Timeout: 'E_TIMEOUT',
  /** The operating system refused a read or write. */
  Io: 'E_IO',
  /** The destination exists and overwriting was not allowed. */
  Exists: 'E_EXISTS',
  /** A command line the CLI cannot use: an unknown command or option, a missing argument, a malformed option value. */
  Usage: 'E_USAGE',
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** Where in which file a problem was found. All parts are optional. */
export interface ErrorLocation {
  readonly file?: string;
  /** Byte offset, for binary files. */
  readonly offset?: number;
  /** 1-based line and column, for text files. */
  readonly line?: number;
  readonly column?: number;
  readonly field?: string;
}

/** What a PopefError carries besides its code and message. */
export interface PopefErrorOptions extends ErrorLocation {
  /** One sentence telling the user what to do about it. */
  readonly suggestion?: string;
  /**
   * The option of the library call that the suggestion names as the way out
   * (`force: true`), so that a front end with its own spelling of it (the
   * CLI's --force) can say that instead, without reading the sentence.
   */
  readonly suggestedOption?: 'force';
  readonly cause?: unknown;
}

export class PopefError extends Error {
  readonly code: ErrorCode;
  readonly file: string | undefined;
  readonly offset: number | undefined;
  readonly line: number | undefined;
  readonly column: number | undefined;
  readonly field: string | undefined;
  readonly suggestion: string | undefined;
  readonly suggestedOption: 'force' | undefined;

  constructor(code: ErrorCode, message: string, options: PopefErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'PopefError';
    this.code = code;
    this.file = options.file;
    this.offset = options.offset;
    this.line = options.line;
    this.column = options.column;
    this.field = options.field;
    this.suggestion = options.suggestion;
    this.suggestedOption = options.suggestedOption;
  }

  /** The same error, attributed to a file (used when a source learns its name late). */
  withFile(file: string): PopefError {
    if (this.file !== undefined) return this;
    return new PopefError(this.code, this.message, {
      file,
      offset: this.offset,
      line: this.line,
      column: this.column,
      field: this.field,
      suggestion: this.suggestion,
      suggestedOption: this.suggestedOption,
      cause: this.cause,
    });
  }

  /** "file: offset N: field: message" (or "file:line:column: ..."), the one-line form the CLI prints. */
  describe(): string {
    const where: string[] = [];
    const position = this.line === undefined ? '' : `:${this.line}:${this.column ?? 0}`;
    if (this.file !== undefined || position !== '') where.push(`${this.file ?? ''}${position}`);
    if (this.offset !== undefined) where.push(`offset ${this.offset}`);
    if (this.field !== undefined) where.push(this.field);
    const head = where.length > 0 ? `${where.join(': ')}: ` : '';
    return `${head}${this.message}`;
  }

  /** The error as plain data (code, message, location, hint), for JSON output. */
  toJSON(): Record<string, unknown> {
    return {
      code: this.code,
      message: this.message,
      file: this.file,
      offset: this.offset,
      line: this.line,
      column: this.column,
      field: this.field,
      suggestion: this.suggestion,
    };
  }
}

/**
 * How an execution plugin failed, for code that acts on it (whether the
 * plugin can take another request; the CLI's exit code), so that nothing
 * matches message text.
 */
export type PluginFailure =
  /** It answered the request with an error of its own, and is free for the next one. */
  | 'reply'
  /** It broke the protocol (a malformed or oversized frame, a wrong reply) and was stopped. */
  | 'protocol'
  /** Its process exited, died by a signal, or stopped reading its requests. */
  | 'died';

export interface PluginErrorOptions extends PopefErrorOptions {
  /** The signal that ended the plugin's process (SIGSEGV), when it died by one. */
  readonly signal?: string;
}

/** An E_PLUGIN error that says how the plugin failed. */
export class PluginError extends PopefError {
  readonly signal: string | undefined;

  constructor(
    readonly failure: PluginFailure,
    readonly plugin: string,
    message: string,
    options: PluginErrorOptions = {},
  ) {
    super(ErrorCode.Plugin, message, options);
    this.name = 'PluginError';
    this.signal = options.signal;
  }
}

export function isPopefError(value: unknown): value is PopefError {
  return value instanceof PopefError;
}

/** Whether `error` is an I/O error (from ioError) whose cause is a missing file: the one failure some callers treat as "absent". */
export function isNotFound(error: unknown): boolean {
  return error instanceof PopefError && (error.cause as NodeJS.ErrnoException | undefined)?.code === 'ENOENT';
}

/**
 * The error for a destination that is already there: the ways out are
 * another `instead` (name, path, directory) or the call's `force: true`,
 * which the error names as its suggested option, for the CLI to say --force.
 */
export function destinationExists(file: string, message: string, instead: string): PopefError {
  return new PopefError(ErrorCode.Exists, message, {
    file,
    suggestion: `choose another ${instead}, or pass force: true to replace it`,
    suggestedOption: 'force',
  });
}

/** Turns a Node fs error into a PopefError that names the path and the OS reason. */
export function ioError(error: unknown, file: string, action: string): PopefError {
  const errno = error as NodeJS.ErrnoException;
  const reason = errno.code ?? 'unknown error';
  const hint: Record<string, string> = {
    ENOENT: 'check the path',
    EACCES: 'check the file permissions',
    EPERM: 'check the file permissions',
    EISDIR: 'give a file, not a directory',
    ENOSPC: 'free some disk space and try again',
    EFBIG: 'the file is larger than this process may write (ulimit -f) or the file system allows',
    EROFS: 'choose a writable destination',
    EEXIST: 'choose another destination, or pass force: true to replace it',
    ENOTDIR: 'a file stands where a directory is needed: give a directory path',
  };
  // A directory cannot be created where a file is: force would not help (it replaces only what a call wrote).
  const fileInTheWay = reason === 'EEXIST' && /\bdirectory\b/.test(action);
  if (fileInTheWay) hint.EEXIST = 'a file of that name is in the way: give a directory path, or move the file';
  return new PopefError(
    errno.code === 'EEXIST' ? ErrorCode.Exists : ErrorCode.Io,
    `cannot ${action}: ${reason}${errno.message && errno.code === undefined ? ` (${errno.message})` : ''}`,
    // The library's option, named as such, for a front end to say its own way (the CLI's --force: report-error.ts).
    { file, suggestion: hint[reason], cause: error, ...(reason === 'EEXIST' && !fileInTheWay ? { suggestedOption: 'force' as const } : {}) },
  );
}
