import { closeSync, openSync, writeSync } from 'node:fs';
import { resolve } from 'node:path';
import { ErrorCode, PopefError } from '../../errors.js';
import { printable } from '../../present/printable.js';
import type { RequestLog } from '../../serve/inference-server.js';
import { LogSettings, type LogSeverity } from '../../serve/log-settings.js';
import type { InstanceEvent, ServedModel } from '../../serve/served-model.js';
import type { Finding } from '../../triton/repository/findings.js';
import type { CliIo } from '../io.js';
import type { ServeFlags } from './serve.js';

/**
 * popef serve's log: records of the server (models loaded or refused,
 * instances restarted, one per request at verbose level 1), written only
 * when the log settings allow their severity (the settings that
 * /v2/logging reports and changes), in the format they name, to
 * --log-file (appended, as Triton opens it) or else to standard error.
 * The start-up, ready and stop lines are the command's own, not log
 * records: they are always written to standard error.
 */
export class ServeLog {
  readonly settings: LogSettings;
  private readonly json: boolean;
  private readonly fd: number | undefined;
  private readonly stderr: (text: string) => void;

  constructor(flags: ServeFlags, io: CliIo) {
    // Reported as given, as Triton reports its --log-file; opened from the working directory.
    const file = flags.logFile ?? '';
    this.settings = new LogSettings({
      file,
      info: flags.logInfo,
      warning: flags.logWarning,
      error: flags.logError,
      // --json-logs has always meant one record per request.
      verboseLevel: flags.logVerbose ?? (flags.jsonLogs === true ? 1 : 0),
      format: flags.logFormat,
    });
    this.json = flags.jsonLogs === true;
    this.stderr = io.stderr;
    try {
      this.fd = file === '' ? undefined : openSync(resolve(io.cwd, file), 'a');
    } catch (error) {
      throw new PopefError(ErrorCode.Io, `cannot open the log file ${file}: ${(error as Error).message}`, {
        suggestion: 'give --log-file a path in a directory that exists and can be written',
      });
    }
  }

  /** One request's record (verbose level 1, as Triton logs each HTTP and gRPC request). */
  request(entry: RequestLog): void {
    if (!this.settings.allows('VERBOSE', 1)) return;
    const model = entry.model === undefined ? '' : ` model '${printable(entry.model, true)}'`;
    const error = entry.error === undefined ? '' : `: ${printable(entry.error, true)}`;
    this.write('VERBOSE', `${entry.transport} ${printable(entry.method, true)}${model}: ${entry.status} in ${entry.ms.toFixed(3)} ms${error}`, {
      ...entry,
      ms: Math.round(entry.ms * 1000) / 1000,
    });
  }

  /** A model loaded (INFO) or refused (ERROR). A model's name is a directory name: escaped, so that it cannot forge a record. */
  model(m: ServedModel): void {
    const name = printable(m.name, true);
    if (m.ready)
      this.write('INFO', `model '${name}' version ${m.version}: READY`, { model: m.name, version: m.version, state: m.state, reason: m.reason });
    else
      this.write(
        'ERROR',
        `model '${name}': UNAVAILABLE: ${printable(m.reason, true)}${m.hint === undefined ? '' : `; hint: ${printable(m.hint, true)}`}`,
        {
          model: m.name,
          version: m.version,
          state: m.state,
          reason: m.reason,
          ...(m.hint === undefined ? {} : { hint: m.hint }),
        },
      );
  }

  /** A finding about a repository as a whole (a model directory given for it, say), at its severity, with its hint. */
  repositoryFinding(root: string, f: Finding): void {
    const severity: LogSeverity = f.severity === 'error' ? 'ERROR' : f.severity === 'warning' ? 'WARNING' : 'INFO';
    const hint = f.hint === undefined ? '' : `; ${f.hint}`;
    this.write(severity, `repository '${printable(root, true)}': ${printable(f.message, true)}${printable(hint, true)}`, {
      repository: root,
      rule: f.rule,
      message: f.message,
      ...(f.hint === undefined ? {} : { hint: f.hint }),
    });
  }

  /** An instance that failed and is restarted (WARNING), is ready again (INFO), or was given up (ERROR). */
  instance(e: InstanceEvent): void {
    const severity: LogSeverity = e.state === 'READY' ? 'INFO' : e.state === 'FAILED' ? 'WARNING' : 'ERROR';
    const what = { READY: 'READY', FAILED: 'FAILED, restarting', GIVEN_UP: 'given up' }[e.state];
    const model = printable(e.model, true);
    this.write(severity, `model '${model}' instance '${printable(e.instance, true)}': ${what}: ${printable(e.reason, true)}`, { ...e });
    if (e.modelUnavailable === true && !this.json) this.write('ERROR', `model '${model}': UNAVAILABLE: no instance can be started`);
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
  }

  private write(severity: LogSeverity, text: string, fields?: Record<string, unknown>): void {
    if (!this.settings.allows(severity)) return;
    const now = new Date();
    let line: string;
    if (this.json) line = JSON.stringify({ time: now.toISOString(), ...fields });
    else if (this.settings.format === 'ISO8601') line = `${now.toISOString().replace(/\.\d{3}Z$/, 'Z')} ${severity[0] ?? ''} popef serve: ${text}`;
    else line = `popef serve: ${text}`;
    if (this.fd === undefined) this.stderr(`${line}\n`);
    else writeSync(this.fd, `${line}\n`);
  }
}
