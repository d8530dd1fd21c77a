import { ErrorCode, PluginError, PopefError } from '../../errors.js';
import { raceDeadline } from '../deadline.js';
import { FrameReader, ProtocolError, writeChunks, writeMessage, type Announcement, type Message, type ReplyBounds } from '../protocol.js';
import type { Tensor } from '../plugin-api.js';
import type { PluginProcess } from './process.js';

/**
 * Requests and replies over a plugin process's pipes (PROTOCOL.md): each
 * request gets an id and waits its turn in a queue, so that one exchange at
 * a time holds the pipes; the turn is given back when the request settles,
 * by construction (no caller can forget it). Every step is raced against
 * the plugin's death, its timeout and an interrupt, and a channel that
 * cannot be trusted to be in step any more stops the process.
 */

export type Request = { readonly type: string } & Record<string, unknown>;

export interface Payload {
  readonly announcement: Announcement;
  readonly chunks: AsyncIterable<Uint8Array>;
}

/** The reply of a streamed request (import, export, doctor), valid while its `use` callback runs. */
export interface Exchange {
  readonly message: Message;
  readonly announced: readonly Announcement[];
  /** The chunks of an announced tensor, in order (see `FrameReader.chunks` for `reuse`). */
  chunks(a: Announcement, reuse?: boolean): AsyncGenerator<Uint8Array>;
  /** A further reply message of the same request (streamed replies send several). */
  next(): Promise<{ message: Message; announced: Announcement[] }>;
}

export interface ChannelOptions {
  readonly name: string;
  /** Aborting rejects the step in progress (the owner stops the process). */
  readonly signal?: AbortSignal;
}

/** The child's input pipe broke while it still runs (see PluginProcess.onTrouble). */
class BrokenPipe extends Error {
  readonly code = 'EPIPE';
}

function isBrokenPipe(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  return code === 'EPIPE' || code === 'ERR_STREAM_DESTROYED' || code === 'ERR_STREAM_WRITE_AFTER_END';
}

export class RequestChannel {
  private readonly reader: FrameReader;
  private nextId = 0;
  /** The end of the last request in line: the next one starts after it. */
  private queue: Promise<void> = Promise.resolve();
  /** Set when the stream is out of step or gone: every later request fails with it. */
  private broken: Error | undefined;

  constructor(
    private readonly process: PluginProcess,
    private readonly options: ChannelOptions,
  ) {
    this.reader = new FrameReader(process.stdout);
  }

  /** Whether a request can still be sent (the stream is in step and the process alive). */
  get usable(): boolean {
    return this.broken === undefined && this.process.healthy;
  }

  /** Sends a request and waits for its reply (with its tensors, each read whole). */
  async request(
    message: Request,
    tensors: readonly Uint8Array[],
    timeoutMs: number,
    reading: { into?: ReadonlyMap<string, Uint8Array>; bounds?: ReplyBounds } = {},
  ): Promise<{ message: Message; tensors: Tensor[] }> {
    return this.inTurn(message, async (id, guard) => {
      // Reading starts at once: a plugin may answer before it has read everything.
      const reply = this.reader.next(reading.into, reading.bounds);
      reply.catch(() => undefined);
      const sentThenAnswered = writeMessage(this.process.stdin, { ...message, id }, tensors, this.reader.clock).then(() => reply);
      const result = await guard(sentThenAnswered, `answer "${message.type}"`, timeoutMs);
      this.checkReply(result.message, id);
      return result;
    });
  }

  /**
   * A request whose payloads are streamed both ways: `sources` are written
   * as chunk frames, then `use` reads the reply (and any further messages
   * and chunks). Each message and chunk must come within `timeoutMs` of
   * the last. When `use` fails other than by the plugin's own error reply,
   * the stream may be mid-message: the process is stopped before the error
   * is passed on (so it cannot go on writing what the caller is removing).
   */
  async withExchange<T>(message: Request, sources: readonly Payload[], timeoutMs: number, use: (reply: Exchange) => Promise<T>): Promise<T> {
    return this.inTurn(message, async (id, guard) => {
      const reader = this.reader;
      const clock = reader.clock;
      await guard(
        writeMessage(this.process.stdin, { ...message, id, tensors: sources.map((x) => ({ ...x.announcement, chunked: true })) }, [], clock),
        `accept "${message.type}"`,
        timeoutMs,
      );
      for (const s of sources) {
        const sent = await guard(writeChunks(this.process.stdin, s.chunks, clock), `accept the data of "${message.type}"`, timeoutMs);
        if (sent !== s.announcement.bytes)
          throw new Error(`payload "${s.announcement.name}" yielded ${sent} bytes, ${s.announcement.bytes} announced`);
      }
      const head = await guard(reader.nextMessage(), `answer "${message.type}"`, timeoutMs);
      this.checkReply(head.message, id);
      const exchange: Exchange = {
        message: head.message,
        announced: head.announced,
        chunks: async function* (a: Announcement, reuse = false): AsyncGenerator<Uint8Array> {
          const it = reader.chunks(a, reuse);
          for (;;) {
            const step = await guard(it.next(), `send the data of "${a.name}"`, timeoutMs);
            if (step.done === true) return;
            yield step.value;
          }
        },
        next: async () => {
          const more = await guard(reader.nextMessage(), `go on with "${message.type}"`, timeoutMs);
          this.checkReply(more.message, id);
          return more;
        },
      };
      return use(exchange);
    }).catch(async (error: unknown) => {
      // Only the plugin's own error reply ends the request in step; otherwise the child is gone before the caller goes on.
      if (!(error instanceof PluginError && error.failure === 'reply')) await this.breakWith(error);
      throw error;
    });
  }

  /**
   * Runs `work` when the requests before it have settled, with the next id
   * and a guard for its steps; the turn passes on however it ends. A
   * failure that leaves the stream out of step breaks the channel.
   */
  private async inTurn<T>(
    message: Request,
    work: (id: number, guard: <S>(step: Promise<S>, what: string, timeoutMs: number) => Promise<S>) => Promise<T>,
  ): Promise<T> {
    const before = this.queue;
    let release: () => void = () => undefined;
    this.queue = new Promise<void>((resolve) => (release = resolve));
    await before;
    try {
      if (this.broken !== undefined) throw this.broken;
      if (!this.process.healthy) throw await this.explain(new BrokenPipe(), message.type);
      const guard = <S>(step: Promise<S>, what: string, timeoutMs: number): Promise<S> => this.guarded(step, message.type, what, timeoutMs);
      return await work(this.nextId++, guard);
    } finally {
      release();
    }
  }

  /** Marks the channel unusable and stops the process; `reason` is what later requests get. */
  private breakWith(reason: unknown): Promise<void> {
    this.broken ??= reason instanceof Error ? reason : new Error(String(reason));
    return this.process.stop();
  }

  /**
   * One step of a request, raced against the child's death, the timeout and
   * an abort; the timeout counts only the time spent waiting for the
   * plugin. Every listener it adds is removed when the step settles: a
   * timed run or a long import takes thousands of steps.
   */
  private async guarded<T>(step: Promise<T>, type: string, what: string, timeoutMs: number): Promise<T> {
    const { name, signal } = this.options;
    let removeListener: () => void = () => undefined;
    const died = new Promise<never>((_, reject) => {
      // Let any reply already sent be read first.
      removeListener = this.process.onTrouble(() => setImmediate(() => reject(this.process.gone ? this.process.deathError(type) : new BrokenPipe())));
    });
    died.catch(() => undefined);
    try {
      return await raceDeadline(
        step,
        {
          timeoutMs,
          spentMs: () => this.reader.clock.waitedMs,
          onTimeout: () => {
            const error = new PopefError(ErrorCode.Timeout, `plugin "${name}" did not ${what} within ${timeoutMs / 1000} s and was stopped`, {
              suggestion: 'raise --timeout if the model really needs longer, or check that the device is free',
            });
            void this.breakWith(error);
            return error;
          },
          signal,
          onAbort: () => new PopefError(ErrorCode.Io, 'interrupted; the plugin was stopped', {}),
        },
        [died],
      );
    } catch (error) {
      throw await this.explain(error, type);
    } finally {
      removeListener();
    }
  }

  /** What a failed step means: the child's death, a protocol violation, or the error as it is. */
  private async explain(error: unknown, type: string): Promise<unknown> {
    // Writing to a child that has gone, or the end of its output: its exit (or its refusal to read) is the story to tell.
    const closed = isBrokenPipe(error) ? 'input' : error instanceof ProtocolError && error.kind === 'ended' ? 'output' : undefined;
    if (closed !== undefined) {
      await this.process.exitWithin();
      const death = this.process.deathError(type, closed);
      // A child that exited is gone already; what it started is stopped by dispose(), as before the split.
      // One that only closed a pipe is still there and is stopped now (its message says so).
      if (this.process.gone) this.broken ??= death;
      else void this.breakWith(death);
      return death;
    }
    if (!(error instanceof ProtocolError)) {
      if (!(error instanceof PopefError)) void this.breakWith(error);
      return error;
    }
    const violation = new PluginError('protocol', this.options.name, `plugin "${this.options.name}" broke the protocol: ${error.message}`, {
      suggestion: 'see src/run/PROTOCOL.md',
    });
    void this.breakWith(violation);
    return violation;
  }

  /** Rejects a reply to another request (the plugin is out of step) or passes on an error reply. */
  private checkReply(reply: Message, id: number): void {
    const name = this.options.name;
    if (reply.id !== id) {
      const violation = new PluginError('protocol', name, `plugin "${name}" broke the protocol: reply id ${reply.id} to request ${id}`, {});
      void this.breakWith(violation);
      throw violation;
    }
    if (reply.type === 'error') {
      const m = reply as Message & { code?: unknown; message?: unknown; hint?: unknown };
      const text = typeof m.message === 'string' ? m.message : 'unknown error';
      throw new PluginError('reply', name, `plugin "${name}": ${text}${typeof m.code === 'string' ? ` (${m.code})` : ''}`, {
        suggestion: typeof m.hint === 'string' ? m.hint : undefined,
      });
    }
  }
}
