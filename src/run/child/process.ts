import { spawn, type ChildProcess } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { PluginError } from '../../errors.js';

/**
 * A plugin program's process: spawned in a process group of its own, its
 * exit awaited once, the last lines of its stderr kept to explain a
 * failure, and stopped (with everything it started) exactly once.
 */

export interface ProcessSpec {
  /** The plugin's name, for messages. */
  readonly name: string;
  readonly command: string;
  readonly args?: readonly string[];
  readonly env?: Readonly<Record<string, string | undefined>>;
}

export interface ProcessExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

const STDERR_LINES = 20;
/** How long a child that is going is given to finish exiting before its death is reported anyway. */
const EXIT_WAIT_MS = 2000;
/** How long SIGTERM is given before SIGKILL. */
const TERM_GRACE_MS = 2000;

/** Process groups of plugins still running: killed if popef exits without stopping them (a second Ctrl-C). */
const liveGroups = new Set<number>();
let exitHookInstalled = false;

function trackGroup(pid: number): void {
  liveGroups.add(pid);
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // eslint-disable-next-line no-restricted-globals -- the last resort at exit: no plugin descendant may outlive popef.
  process.once('exit', () => {
    for (const group of liveGroups) signalPid(-group, 'SIGKILL');
  });
}

function signalPid(pid: number, signal: NodeJS.Signals): boolean {
  try {
    // eslint-disable-next-line no-restricted-globals -- process.kill is how a process group is signalled.
    process.kill(pid, signal);
    return true;
  } catch {
    return false;
  }
}

export class PluginProcess {
  readonly stdin: Writable;
  readonly stdout: Readable;
  /** Resolves when the process has exited (or could not start). */
  readonly exit: Promise<ProcessExit>;
  private exited: ProcessExit | undefined;
  private readonly tail: string[] = [];
  private readonly listeners = new Set<() => void>();
  private inputClosed = false;
  private readonly child: ChildProcess;
  /** The stop of the process group and its pipes, once begun. */
  private reaping: Promise<void> | undefined;

  constructor(private readonly spec: ProcessSpec) {
    // Its own process group, so that stopping the plugin stops whatever it started too (a shell script's children).
    const child = spawn(spec.command, [...(spec.args ?? [])], { stdio: ['pipe', 'pipe', 'pipe'], env: spec.env, detached: true });
    this.child = child;
    this.stdin = child.stdin;
    this.stdout = child.stdout;
    if (child.pid !== undefined) trackGroup(child.pid);
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (text: string) => {
      for (const line of text.split('\n')) if (line.trim() !== '') this.tail.push(line);
      this.tail.splice(0, Math.max(0, this.tail.length - STDERR_LINES));
    });
    // Writes to a child that died fail with EPIPE; the exit is what gets
    // reported. A child that closed its input without exiting is trouble too:
    // a request written into the pipe's buffer before the error would
    // otherwise wait for its timeout.
    child.stdin.on('error', () => {
      this.inputClosed = true;
      this.notify();
    });
    this.exit = new Promise<ProcessExit>((resolve) => {
      const settle = (exit: ProcessExit): void => {
        if (this.exited !== undefined) return;
        this.exited = exit;
        resolve(exit);
        this.notify();
      };
      child.on('error', (error) => {
        this.tail.push(`could not start ${spec.command}: ${error.message}`);
        settle({ code: 127, signal: null });
      });
      child.on('exit', (code, signal) => settle({ code, signal }));
    });
  }

  /** Whether the process has exited. */
  get gone(): boolean {
    return this.exited !== undefined;
  }

  /** Whether the process can take requests: it runs and reads its input. */
  get healthy(): boolean {
    return this.exited === undefined && !this.inputClosed;
  }

  /**
   * Calls `listener` once when the process exits or its input pipe breaks
   * (at once if either has happened); returns its removal. Each request
   * step adds one, and a timed run takes thousands: unlike a `then` on
   * `exit`, it does not stay behind.
   */
  onTrouble(listener: () => void): () => void {
    if (!this.healthy) {
      listener();
      return () => undefined;
    }
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private notify(): void {
    const listeners = [...this.listeners];
    this.listeners.clear();
    for (const listener of listeners) listener();
  }

  /** Resolves when the process has exited, or after `ms`, whichever is first. */
  async exitWithin(ms = EXIT_WAIT_MS): Promise<void> {
    if (this.exited !== undefined) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.exit, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
    clearTimeout(timer);
  }

  /**
   * How the process ended, during `request`, with its last stderr lines. A
   * process still running closed its end of a pipe (`closed`: its standard
   * input or output) without exiting, and is reported for that.
   */
  deathError(request: string, closed: 'input' | 'output' = 'output'): PluginError {
    const e = this.exited;
    const tail = this.tail.length > 0 ? `; its last output:\n  ${this.tail.slice(-5).join('\n  ')}` : '';
    const name = this.spec.name;
    if (e === undefined) {
      return new PluginError(
        'died',
        name,
        `plugin "${name}" closed its standard ${closed} during ${request} without exiting, and was stopped${tail}`,
        {
          suggestion: 'a plugin reads requests and answers them until "close": see src/run/PROTOCOL.md',
        },
      );
    }
    if (e.signal !== null) {
      return new PluginError('died', name, `plugin "${name}" died by signal ${e.signal} during ${request}${tail}`, {
        suggestion: "the runtime crashed: run again, or check the plugin's own logs",
        signal: e.signal,
      });
    }
    return new PluginError('died', name, `plugin "${name}" exited with status ${e.code ?? '?'} during ${request}${tail}`, {
      suggestion: "see the plugin's output above",
    });
  }

  /**
   * SIGTERM to the plugin's process group, then SIGKILL after 2 s; resolves
   * when the plugin is gone. Descendants that outlive it are killed, and its
   * pipes closed (a grandchild holding them would keep popef alive). Once:
   * after that its process group id may belong to someone else, so callers
   * at the same time share the one stop.
   */
  stop(): Promise<void> {
    this.reaping ??= this.reap();
    return this.reaping;
  }

  private async reap(): Promise<void> {
    const child = this.child;
    if (this.exited === undefined) {
      this.signalGroup('SIGTERM');
      const force = setTimeout(() => this.signalGroup('SIGKILL'), TERM_GRACE_MS);
      await this.exit;
      clearTimeout(force);
    }
    this.signalGroup('SIGKILL');
    if (child.pid !== undefined) liveGroups.delete(child.pid);
    child.stdout?.destroy();
    child.stderr?.destroy();
    child.stdin?.destroy();
  }

  private signalGroup(signal: NodeJS.Signals): void {
    const child = this.child;
    if (child.pid === undefined || !signalPid(-child.pid, signal)) child.kill(signal);
  }
}
