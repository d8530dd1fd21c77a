import { spawn, type ChildProcess } from 'node:child_process';
import type { Writable } from 'node:stream';
import { constants } from 'node:os';
import { ErrorCode, PopefError } from '../errors.js';
import { raceDeadline } from './deadline.js';
import { ModelSet } from '../format/model-set.js';
import { modelPayload } from './model-payload.js';
import type { Availability, ExecutionPlugin, ModelRequest, OpenedModel, Tensor, TensorSpec } from './plugin-api.js';
import { FrameReader, PROTOCOL, ProtocolError, announce, parseSpecs, writeChunks, writeMessage, type Announcement, type Message } from './protocol.js';

/**
 * An execution plugin in a child process, speaking PROTOCOL.md over its
 * stdin/stdout. The host never hangs: every request has a timeout, a child
 * that dies is reported with its signal or status and its last stderr
 * lines, and dispose() (also run on abort) stops the child for good.
 */

export interface ChildPluginOptions {
  readonly name: string;
  readonly command: string;
  readonly args?: readonly string[];
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Handshake and close (default 10 s). */
  readonly controlTimeoutMs?: number;
  /** Open and run (default 300 s). */
  readonly requestTimeoutMs?: number;
  /** Aborting stops the child. */
  readonly signal?: AbortSignal;
  /** Host identification sent in the handshake. */
  readonly host?: string;
}

const STDERR_LINES = 20;

function signalNumber(signal: NodeJS.Signals): number {
  return (constants.signals as Record<string, number | undefined>)[signal] ?? 0;
}

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

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined || !signalPid(-child.pid, signal)) child.kill(signal);
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

/** An execution plugin in a child process, spoken to over the stdio protocol of src/run/PROTOCOL.md. */
export class ChildProcessPlugin implements ExecutionPlugin {
  readonly name: string;
  private child: ChildProcess | undefined;
  private reader: FrameReader | undefined;
  private hello: Availability | undefined;
  private nextId = 0;
  private readonly stderrTail: string[] = [];
  private exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  private exitWaiters: (() => void)[] = [];
  private busy = false;
  /** The stop of the process group and its pipes, once begun. */
  private reaping: Promise<void> | undefined;

  constructor(private readonly options: ChildPluginOptions) {
    this.name = options.name;
    options.signal?.addEventListener('abort', () => void this.kill(), { once: true });
  }

  private start(): void {
    if (this.child !== undefined) return;
    // Its own process group, so that stopping the plugin stops whatever it started too (a shell script's children).
    const child = spawn(this.options.command, [...(this.options.args ?? [])], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: this.options.env === undefined ? undefined : (this.options.env),
      detached: true,
    });
    this.child = child;
    if (child.pid !== undefined) trackGroup(child.pid);
    this.reader = new FrameReader(child.stdout);
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (text: string) => {
      for (const line of text.split('\n')) if (line.trim() !== '') this.stderrTail.push(line);
      this.stderrTail.splice(0, Math.max(0, this.stderrTail.length - STDERR_LINES));
    });
    // Writes to a child that died fail with EPIPE; the exit is what gets reported.
    child.stdin.on('error', () => undefined);
    child.on('error', (error) => {
      this.stderrTail.push(`could not start ${this.options.command}: ${error.message}`);
      this.exited = { code: 127, signal: null };
      this.flushExit();
    });
    child.on('exit', (code, signal) => {
      this.exited = { code, signal };
      this.flushExit();
    });
  }

  private flushExit(): void {
    const waiters = this.exitWaiters;
    this.exitWaiters = [];
    for (const w of waiters) w();
  }

  private deathError(request: string): PopefError {
    const e = this.exited;
    const tail = this.stderrTail.length > 0 ? `; its last output:\n  ${this.stderrTail.slice(-5).join('\n  ')}` : '';
    if (e?.signal !== null && e?.signal !== undefined) {
      return new PopefError(ErrorCode.Plugin, `plugin "${this.name}" died by signal ${e.signal} during ${request}${tail}`, {
        suggestion: 'the runtime crashed: run again, or check the plugin\'s own logs',
        exitCode: 128 + signalNumber(e.signal),
      });
    }
    return new PopefError(ErrorCode.Plugin, `plugin "${this.name}" exited with status ${e?.code ?? '?'} during ${request}${tail}`, {
      suggestion: 'see the plugin\'s output above',
    });
  }

  /** Starts the child if needed and claims it for one request. */
  private begin(type: string): { reader: FrameReader; stdin: Writable; id: number } {
    this.start();
    const reader = this.reader;
    const stdin = this.child?.stdin ?? null;
    if (reader === undefined || stdin === null) throw new Error('plugin process not started');
    if (this.busy) throw new Error('plugin requests must not overlap');
    if (this.exited !== undefined) throw this.deathError(type);
    this.busy = true;
    return { reader, stdin, id: this.nextId++ };
  }

  /**
   * One step of a request, raced against the child's death, the timeout and
   * an abort. Every listener it adds is removed when the step settles: a
   * timed run or a long import takes thousands of steps.
   */
  private async guarded<T>(step: Promise<T>, type: string, what: string, timeoutMs: number): Promise<T> {
    let onExit: (() => void) | undefined;
    const died = new Promise<never>((_, reject) => {
      // Let any reply already sent be read first.
      onExit = () => setImmediate(() => reject(this.deathError(type)));
      if (this.exited !== undefined) onExit();
      else this.exitWaiters.push(onExit);
    });
    died.catch(() => undefined);
    try {
      return await raceDeadline(
        step,
        {
          timeoutMs,
          onTimeout: () => {
            void this.kill();
            return new PopefError(ErrorCode.Timeout, `plugin "${this.name}" did not ${what} within ${timeoutMs / 1000} s and was stopped`, {
              suggestion: 'raise --timeout if the model really needs longer, or check that the device is free',
            });
          },
          signal: this.options.signal,
          onAbort: () => new PopefError(ErrorCode.Io, 'interrupted; the plugin was stopped', {}),
        },
        [died],
      );
    } catch (error) {
      // Writing to a child that has gone: its exit, not the pipe, is the story to tell.
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EPIPE' || code === 'ERR_STREAM_DESTROYED' || code === 'ERR_STREAM_WRITE_AFTER_END') {
        await this.exitWithin(2000);
        throw this.deathError(type);
      }
      if (!(error instanceof ProtocolError)) throw error;
      if (error.message === 'ended') {
        // The stream ended because the child is going: report how it went.
        await this.exitWithin(2000);
        throw this.deathError(type);
      }
      void this.kill();
      throw new PopefError(ErrorCode.Plugin, `plugin "${this.name}" broke the protocol: ${error.message}`, { suggestion: 'see src/run/PROTOCOL.md' });
    } finally {
      if (onExit !== undefined) this.exitWaiters = this.exitWaiters.filter((w) => w !== onExit);
    }
  }

  /** Resolves when the child has exited, or after `ms`, whichever is first. */
  private async exitWithin(ms: number): Promise<void> {
    if (this.exited !== undefined) return;
    let timer: NodeJS.Timeout | undefined;
    let onExit: (() => void) | undefined;
    await new Promise<void>((resolve) => {
      onExit = resolve;
      this.exitWaiters.push(onExit);
      timer = setTimeout(resolve, ms);
    });
    clearTimeout(timer);
    this.exitWaiters = this.exitWaiters.filter((w) => w !== onExit);
  }

  /** Rejects a reply to another request (stopping the plugin, which is out of step) or an error reply. */
  private checkReply(reply: Message, id: number): void {
    if (reply.id !== id) {
      void this.kill();
      throw new PopefError(ErrorCode.Plugin, `plugin "${this.name}" broke the protocol: reply id ${reply.id} to request ${id}`, {});
    }
    if (reply.type === 'error') {
      const m = reply as Message & { code?: string; message?: string; hint?: string };
      throw new PopefError(ErrorCode.Plugin, `plugin "${this.name}": ${m.message ?? 'unknown error'}${m.code === undefined ? '' : ` (${m.code})`}`, {
        suggestion: m.hint,
      });
    }
  }

  /** Sends a request and waits for its reply, racing the timeout and the child's death. */
  private async request(message: { readonly type: string } & Record<string, unknown>, tensors: readonly Uint8Array[], timeoutMs: number, into?: ReadonlyMap<string, Uint8Array>): Promise<{ message: Message; tensors: Tensor[] }> {
    const { reader, stdin, id } = this.begin(message.type);
    try {
      // Reading starts at once: a plugin may answer before it has read everything.
      const reply = reader.next(into);
      reply.catch(() => undefined);
      const sentThenAnswered = writeMessage(stdin, { ...message, id }, tensors).then(() => reply);
      const result = await this.guarded(sentThenAnswered, message.type, `answer "${message.type}"`, timeoutMs);
      this.checkReply(result.message, id);
      return result;
    } finally {
      this.busy = false;
    }
  }

  /**
   * A request whose payloads are streamed both ways (import/export): the
   * request's tensors are written as chunk frames from their sources, and
   * the reply's announced tensors are read with `chunks()`, in order. Each
   * chunk must arrive within `timeoutMs`; `finish()` must be called after
   * the last one (it releases the plugin for the next request).
   */
  async exchange(
    message: { readonly type: string } & Record<string, unknown>,
    sources: readonly { readonly announcement: Announcement; readonly chunks: AsyncIterable<Uint8Array> }[],
    timeoutMs: number,
  ): Promise<{
    message: Message;
    announced: Announcement[];
    /** See `FrameReader.chunks` for `reuse`. */
    chunks: (a: Announcement, reuse?: boolean) => AsyncGenerator<Uint8Array>;
    /** A further reply message of the same request (streamed replies send several). */
    next: () => Promise<{ message: Message; announced: Announcement[] }>;
    /** Ends the exchange and releases the plugin for the next request. */
    finish: () => void;
  }> {
    const { reader, stdin, id } = this.begin(message.type);
    const guard = <T>(step: Promise<T>, what: string): Promise<T> => this.guarded(step, message.type, what, timeoutMs);
    try {
      await guard(writeMessage(stdin, { ...message, id, tensors: sources.map((x) => ({ ...x.announcement, chunked: true })) }), `accept "${message.type}"`);
      for (const s of sources) {
        const sent = await guard(writeChunks(stdin, s.chunks), `accept the data of "${message.type}"`);
        if (sent !== s.announcement.bytes) throw new Error(`payload "${s.announcement.name}" yielded ${sent} bytes, ${s.announcement.bytes} announced`);
      }
      const head = await guard(reader.nextMessage(), `answer "${message.type}"`);
      this.checkReply(head.message, id);
      const chunks = async function* (a: Announcement, reuse = false): AsyncGenerator<Uint8Array> {
        const it = reader.chunks(a, reuse);
        for (;;) {
          const step = await guard(it.next(), `send the data of "${a.name}"`);
          if (step.done === true) return;
          yield step.value;
        }
      };
      const next = async (): Promise<{ message: Message; announced: Announcement[] }> => {
        const more = await guard(reader.nextMessage(), `go on with "${message.type}"`);
        // An error reply ends the request: the plugin is free again.
        if (more.message.type === 'error') this.busy = false;
        this.checkReply(more.message, id);
        return more;
      };
      return { message: head.message, announced: head.announced, chunks, next, finish: () => (this.busy = false) };
    } catch (error) {
      this.busy = false;
      throw error;
    }
  }

  async probe(): Promise<Availability> {
    if (this.hello !== undefined) return this.hello;
    const reply = await this.request({ type: 'hello', protocol: PROTOCOL, host: this.options.host ?? 'popef-toolkit' }, [], this.options.controlTimeoutMs ?? 10_000);
    const m = reply.message as Message & { protocol?: unknown; available?: unknown; reason?: unknown; hint?: unknown };
    if (m.type !== 'hello' || m.protocol !== PROTOCOL) {
      void this.kill();
      throw new PopefError(ErrorCode.Plugin, `plugin "${this.name}" speaks ${JSON.stringify(m.protocol)}, not ${PROTOCOL}`, {
        suggestion: 'update the plugin or popef-toolkit so that both speak the same protocol',
      });
    }
    this.hello = {
      available: m.available === true,
      ...(typeof m.reason === 'string' ? { reason: m.reason } : {}),
      ...(typeof m.hint === 'string' ? { hint: m.hint } : {}),
    };
    return this.hello;
  }

  /** Starts the child if need be, and has it load the model. */
  async open(request: ModelRequest): Promise<OpenedModel> {
    const availability = await this.probe();
    if (!availability.available) {
      throw new PopefError(ErrorCode.PluginUnavailable, `plugin "${this.name}" cannot run here: ${availability.reason ?? 'no reason given'}`, {
        suggestion: availability.hint,
      });
    }
    const set = await ModelSet.open(request.files);
    let payload;
    try {
      payload = await modelPayload(set, request.executable);
    } finally {
      await set.close();
    }
    const tensors = payload.payloads.map((p) => ({ name: p.name, dtype: 'U8' as const, shape: [p.data.byteLength], data: p.data }));
    const reply = await this.request(
      { type: 'open', executable: request.executable, files: request.files, options: request.options, model: payload.model, tensors: announce(tensors) },
      tensors.map((t) => t.data),
      this.options.requestTimeoutMs ?? 300_000,
    );
    let inputs: TensorSpec[];
    let outputs: TensorSpec[];
    try {
      inputs = parseSpecs(reply.message.inputs, 'inputs');
      outputs = parseSpecs(reply.message.outputs, 'outputs');
    } catch (error) {
      void this.kill();
      throw new PopefError(ErrorCode.Plugin, `plugin "${this.name}" broke the protocol: ${(error as Error).message}`, {});
    }
    return {
      inputs,
      outputs,
      run: async (values, runOptions) => {
        const list = [...values.values()];
        const r = await this.request({ type: 'run', tensors: announce(list) }, list.map((t) => t.data), this.options.requestTimeoutMs ?? 300_000, runOptions?.into);
        return new Map(r.tensors.map((t) => [t.name, t]));
      },
      close: async () => {
        await this.dispose();
      },
    };
  }

  /** Asks the child to close, then makes sure it is gone. */
  async dispose(): Promise<void> {
    if (this.child === undefined) return;
    if (this.exited === undefined) {
      try {
        await this.request({ type: 'close' }, [], this.options.controlTimeoutMs ?? 10_000);
      } catch {
        // A child that cannot close cleanly is stopped below.
      }
    }
    // Also after a child that died by itself: what it started, and the pipes they hold, go with it.
    await this.kill();
  }

  /**
   * SIGTERM to the plugin's process group, then SIGKILL after 2 s; resolves
   * when the plugin is gone. Descendants that outlive it are killed, and its
   * pipes closed (a grandchild holding them would keep popef alive).
   */
  kill(): Promise<void> {
    const child = this.child;
    if (child === undefined) return Promise.resolve();
    // Once: after that its process group id may belong to someone else. Callers at the same time share the one stop.
    this.reaping ??= this.reap(child);
    return this.reaping;
  }

  private async reap(child: ChildProcess): Promise<void> {
    if (this.exited === undefined) {
      const gone = new Promise<void>((resolve) => {
        if (this.exited !== undefined) resolve();
        else this.exitWaiters.push(resolve);
      });
      signalGroup(child, 'SIGTERM');
      const force = setTimeout(() => signalGroup(child, 'SIGKILL'), 2000);
      await gone;
      clearTimeout(force);
    }
    signalGroup(child, 'SIGKILL');
    if (child.pid !== undefined) liveGroups.delete(child.pid);
    child.stdout?.destroy();
    child.stderr?.destroy();
    child.stdin?.destroy();
  }

}
