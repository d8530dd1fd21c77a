import { PluginError } from '../errors.js';
import { ModelSet } from '../format/model-set.js';
import { RequestChannel, type Exchange, type Payload, type Request } from './child/channel.js';
import { PluginProcess } from './child/process.js';
import { modelPayload } from './model-payload.js';
import { cannotRunHere, type Availability, type ExecutionPlugin, type ModelRequest, type OpenedModel, type TensorSpec } from './plugin-api.js';
import { PROTOCOL, announce, parseSpecs, type ReplyBounds } from './protocol.js';
import { byteLength } from './tensor.js';

/**
 * An execution plugin in a child process, speaking PROTOCOL.md over its
 * stdin/stdout: the ExecutionPlugin façade over the process
 * (child/process.ts) and its request channel (child/channel.ts). The host
 * never hangs: every request has a timeout, a child that dies is reported
 * with its signal or status and its last stderr lines, and dispose() (also
 * run on abort) stops the child for good.
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

export type { Exchange, Payload } from './child/channel.js';

/** An execution plugin in a child process, spoken to over the stdio protocol of src/run/PROTOCOL.md. */
export class ChildProcessPlugin implements ExecutionPlugin {
  readonly name: string;
  private process: PluginProcess | undefined;
  private channel: RequestChannel | undefined;
  private hello: Availability | undefined;

  constructor(private readonly options: ChildPluginOptions) {
    this.name = options.name;
    options.signal?.addEventListener('abort', () => void this.kill(), { once: true });
  }

  private get controlTimeoutMs(): number {
    return this.options.controlTimeoutMs ?? 10_000;
  }

  private get requestTimeoutMs(): number {
    return this.options.requestTimeoutMs ?? 300_000;
  }

  /** The channel to the child, started on first use. */
  private connect(): RequestChannel {
    if (this.channel === undefined) {
      const { name, command, args, env } = this.options;
      this.process = new PluginProcess({ name, command, args, env });
      this.channel = new RequestChannel(this.process, { name, signal: this.options.signal });
    }
    return this.channel;
  }

  /**
   * A request whose payloads are streamed both ways (import, export): see
   * RequestChannel.withExchange. The plugin is free for the next request
   * when `use` settles; if `use` fails mid-stream, the child is stopped.
   */
  withExchange<T>(message: Request, sources: readonly Payload[], timeoutMs: number, use: (reply: Exchange) => Promise<T>): Promise<T> {
    return this.connect().withExchange(message, sources, timeoutMs, use);
  }

  /** The handshake (once): whether the plugin can run here. */
  async probe(): Promise<Availability> {
    if (this.hello !== undefined) return this.hello;
    const reply = await this.connect().request(
      { type: 'hello', protocol: PROTOCOL, host: this.options.host ?? 'popef-toolkit' },
      [],
      this.controlTimeoutMs,
    );
    const m = reply.message as typeof reply.message & { protocol?: unknown; available?: unknown; reason?: unknown; hint?: unknown };
    if (m.type !== 'hello' || m.protocol !== PROTOCOL) {
      void this.kill();
      throw new PluginError('protocol', this.name, `plugin "${this.name}" speaks ${JSON.stringify(m.protocol)}, not ${PROTOCOL}`, {
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
    if (!availability.available) throw cannotRunHere(`plugin "${this.name}"`, availability);
    const set = await ModelSet.open(request.files);
    let payload;
    try {
      payload = await modelPayload(set, request.executable);
    } finally {
      await set.close();
    }
    const tensors = payload.payloads.map((p) => ({ name: p.name, dtype: 'U8' as const, shape: [p.data.byteLength], data: p.data }));
    const channel = this.connect();
    const reply = await channel.request(
      {
        type: 'open',
        executable: request.executable,
        files: request.files,
        options: request.options,
        model: payload.model,
        tensors: announce(tensors),
      },
      tensors.map((t) => t.data),
      this.requestTimeoutMs,
    );
    let inputs: TensorSpec[];
    let outputs: TensorSpec[];
    try {
      inputs = parseSpecs(reply.message.inputs, 'inputs');
      outputs = parseSpecs(reply.message.outputs, 'outputs');
    } catch (error) {
      void this.kill();
      throw new PluginError('protocol', this.name, `plugin "${this.name}" broke the protocol: ${(error as Error).message}`, {});
    }
    // A result holds the model's outputs: no more tensors, and none larger, are read.
    const bounds: ReplyBounds = {
      maxTensors: outputs.length,
      maxTensorBytes: outputs.reduce((most, s) => Math.max(most, byteLength(s)), 0),
      what: `the model's ${outputs.length} output${outputs.length === 1 ? '' : 's'}`,
    };
    let closed = false;
    const timeoutMs = this.requestTimeoutMs;
    return {
      inputs,
      outputs,
      run: async (values, runOptions) => {
        if (closed) throw new Error(`plugin "${this.name}": run() after close()`);
        const list = [...values.values()];
        const r = await channel.request(
          { type: 'run', tensors: announce(list) },
          list.map((t) => t.data),
          timeoutMs,
          { into: runOptions?.into, bounds },
        );
        return new Map(r.tensors.map((t) => [t.name, t]));
      },
      // The protocol holds one model per child, which the next open replaces
      // and dispose() stops with the child: closing the model ends its use.
      close: () => {
        closed = true;
        return Promise.resolve();
      },
    };
  }

  /** Asks the child to close, then makes sure it is gone. */
  async dispose(): Promise<void> {
    const channel = this.channel;
    if (channel === undefined) return;
    if (channel.usable) {
      try {
        await channel.request({ type: 'close' }, [], this.controlTimeoutMs);
      } catch {
        // A child that cannot close cleanly is stopped below.
      }
    }
    // Also after a child that died by itself: what it started, and the pipes they hold, go with it.
    await this.kill();
  }

  /**
   * Stops the plugin's process group (SIGTERM, then SIGKILL after 2 s) and
   * resolves when it is gone; see PluginProcess.stop.
   */
  kill(): Promise<void> {
    return this.process?.stop() ?? Promise.resolve();
  }
}
