import { ErrorCode, PopefError } from '../errors.js';
import type { ExecutionPlugin } from '../run/plugin-api.js';
import { GrpcTransport } from './grpc-transport.js';
import { HttpTransport } from './http-transport.js';
import { InferenceServer, type RequestLog } from './inference-server.js';
import { ModelControl, type ModelControlOptions } from './model-control.js';
import { ModelRepository } from './model-repository.js';
import type { InstanceEvent, ServedModel } from './served-model.js';

/**
 * The server behind `popef serve` (not exported by src/index.ts: its types
 * are not a stable API yet): loads the repositories into the plugin, then
 * listens on HTTP and gRPC. stop() refuses new requests, lets running ones
 * finish, closes the listeners, the models and the plugin, in that order.
 */

export interface ServeOptions {
  readonly repositories: readonly string[];
  /** Makes one plugin per model instance. */
  readonly createPlugin: () => Promise<ExecutionPlugin>;
  readonly pluginOptions?: Readonly<Record<string, string>>;
  readonly models?: readonly string[];
  readonly host: string;
  /** undefined: no HTTP; 0: any free port. */
  readonly httpPort?: number;
  readonly grpcPort?: number;
  readonly maxRequestSize: number;
  readonly log?: (entry: RequestLog) => void;
  readonly onModel?: (model: ServedModel) => void;
  /** Triton's --model-control-mode and its options (default: none). */
  readonly modelControl?: ModelControlOptions;
  /** An instance failed, was restarted or given up (the CLI logs it). */
  readonly onInstanceEvent?: (event: InstanceEvent) => void;
}

export interface RunningServer {
  readonly core: InferenceServer;
  readonly httpPort?: number;
  readonly grpcPort?: number;
  stop(): Promise<void>;
}

function portError(error: unknown, what: string, host: string, port: number): PopefError {
  const code = (error as NodeJS.ErrnoException).code;
  const flag = what === 'HTTP' ? '--http-port' : '--grpc-port';
  if (code === 'EADDRINUSE' || /address already in use|No address added/i.test((error as Error).message)) {
    return new PopefError(ErrorCode.Io, `cannot serve ${what} on ${host}:${port}: the port is in use`, { suggestion: `stop what listens there, or choose another port with ${flag} (0 picks a free one)` });
  }
  return new PopefError(ErrorCode.Io, `cannot serve ${what} on ${host}:${port}: ${(error as Error).message}`, { suggestion: `check --host and ${flag}` });
}

export async function startServer(options: ServeOptions): Promise<RunningServer> {
  const repository = new ModelRepository();
  const loadOptions = { createPlugin: options.createPlugin, models: options.models, pluginOptions: options.pluginOptions, onModel: options.onModel, onInstanceEvent: options.onInstanceEvent };
  const control = new ModelControl(repository, options.repositories, loadOptions, options.modelControl ?? { mode: 'none' });
  const core = new InferenceServer(repository, control);
  const transportOptions = { maxRequestSize: options.maxRequestSize, log: options.log };
  const http = options.httpPort === undefined ? undefined : new HttpTransport(core, transportOptions);
  const grpc = options.grpcPort === undefined ? undefined : new GrpcTransport(core, transportOptions);
  // Listen first, so that a port in use fails at once, and clients see "not ready" while models load.
  let httpPort: number | undefined;
  let grpcPort: number | undefined;
  try {
    if (http !== undefined) httpPort = await http.listen(options.httpPort ?? 0, options.host).catch((e: unknown) => Promise.reject(portError(e, 'HTTP', options.host, options.httpPort ?? 0)));
    if (grpc !== undefined) grpcPort = await grpc.listen(options.grpcPort ?? 0, options.host).catch((e: unknown) => Promise.reject(portError(e, 'gRPC', options.host, options.grpcPort ?? 0)));
    await control.start();
  } catch (error) {
    await Promise.allSettled([http?.close(), grpc?.close(), control.stop(), repository.close()]);
    throw error;
  }
  let stopping: Promise<void> | undefined;
  return {
    core,
    httpPort,
    grpcPort,
    stop: () => {
      stopping ??= (async () => {
        core.stopAccepting();
        await Promise.allSettled([http?.close(), grpc?.close(), control.stop(), repository.idle()]);
        await repository.close();
        core.sharedMemory.close();
      })();
      return stopping;
    },
  };
}
