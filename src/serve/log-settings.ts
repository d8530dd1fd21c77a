import { RequestError, invalidArg } from './status.js';

/**
 * The server's log settings, as Triton keeps and reports them (common
 * r24.10, logging.h; server r24.10, http_server.cc HandleLogging and
 * grpc_server.cc RegisterLogging): which severities are on, the verbose
 * level, the record format and the log file. The server asks `allows`
 * before it writes a record, so what it reports is what it does; the CLI
 * writes the records (to --log-file when one is given, else to stderr).
 */

export type LogSeverity = 'INFO' | 'WARNING' | 'ERROR' | 'VERBOSE';
export type LogFormat = 'default' | 'ISO8601';

export interface LogSettingsReport {
  readonly log_file: string;
  readonly log_info: boolean;
  readonly log_warning: boolean;
  readonly log_error: boolean;
  readonly log_verbose_level: number;
  readonly log_format: LogFormat;
}

/**
 * How a transport hands an update over, each field read when its turn
 * comes (Triton applies the fields one by one, so an error leaves the
 * ones before it applied): undefined when the request leaves it out. The
 * reader throws the transport's own type errors.
 */
export interface LogUpdateReader {
  /** Whether the request names log_file at all (over gRPC that alone is refused; HTTP allows a null). */
  logFile(): boolean;
  bool(key: 'log_info' | 'log_warning' | 'log_error'): boolean | undefined;
  uint(key: 'log_verbose_level'): number | undefined;
  string(key: 'log_format'): string | undefined;
  /** The class and words of a bad log_format: HTTP answers UNAVAILABLE "--log_format", gRPC INVALID_ARG "log_format". */
  badFormat(value: string): RequestError;
}

export interface LogSettingsInit {
  readonly file?: string;
  readonly info?: boolean;
  readonly warning?: boolean;
  readonly error?: boolean;
  readonly verboseLevel?: number;
  readonly format?: LogFormat;
}

export class LogSettings {
  /** Fixed at start (--log-file): Triton refuses to change it over the network. */
  readonly file: string;
  info: boolean;
  warning: boolean;
  error: boolean;
  verboseLevel: number;
  format: LogFormat;

  constructor(init: LogSettingsInit = {}) {
    this.file = init.file ?? '';
    this.info = init.info ?? true;
    this.warning = init.warning ?? true;
    this.error = init.error ?? true;
    this.verboseLevel = init.verboseLevel ?? 0;
    this.format = init.format ?? 'default';
  }

  /** Whether a record of this severity (and, for VERBOSE, this level) is written now. */
  allows(severity: LogSeverity, level = 1): boolean {
    switch (severity) {
      case 'INFO':
        return this.info;
      case 'WARNING':
        return this.warning;
      case 'ERROR':
        return this.error;
      default:
        return this.verboseLevel >= level;
    }
  }

  report(): LogSettingsReport {
    return {
      log_file: this.file,
      log_info: this.info,
      log_warning: this.warning,
      log_error: this.error,
      log_verbose_level: this.verboseLevel,
      log_format: this.format,
    };
  }

  /** Applies an update field by field in Triton's order; the first bad field throws, leaving the earlier ones applied. */
  update(reader: LogUpdateReader): void {
    if (reader.logFile()) throw new RequestError('UNSUPPORTED', 'log file location can not be updated through network protocol');
    const info = reader.bool('log_info');
    if (info !== undefined) this.info = info;
    const warning = reader.bool('log_warning');
    if (warning !== undefined) this.warning = warning;
    const error = reader.bool('log_error');
    if (error !== undefined) this.error = error;
    const verbose = reader.uint('log_verbose_level');
    // Triton keeps the level as an int32_t.
    if (verbose !== undefined) this.verboseLevel = verbose | 0;
    const format = reader.string('log_format');
    if (format !== undefined) {
      if (format !== 'default' && format !== 'ISO8601') throw reader.badFormat(format);
      this.format = format;
    }
  }
}

/** A bad log_format over HTTP: Triton answers it UNAVAILABLE and names the command-line flag. */
export function httpBadLogFormat(value: string): RequestError {
  return new RequestError('UNAVAILABLE', `invalid argument for --log_format, got: ${value}`);
}

/** A bad log_format over gRPC. */
export function grpcBadLogFormat(value: string): RequestError {
  return invalidArg(`invalid argument for log_format, got: ${value}`);
}
