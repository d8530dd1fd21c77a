import { ErrorCode, PopefError } from '../errors.js';
import type { ExecutionPlugin } from '../run/plugin-api.js';
import { BodyBudget } from './body-budget.js';
import { GrpcTransport } from './grpc-transport.js';
import { HttpTransport } from './http-transport.js';
import { MetricsTransport } from './metrics-transport.js';
import { InferenceServer, type RequestLog, type ServerIdentity, type TransportOptions } from './inference-server.js';
import type { LogSettings } from './log-settings.js';
import { ModelControl, type ModelControlOptions } from './model-control.js';
import { ModelRepository } from './model-repository.js';
import type { InstanceEvent, ServedModel } from './served-model.js';
import type { Transport } from './transport.js';
import type { Finding } from '../triton/repository/findings.js';

/**
 * The server behind `popef serve` (not exported by src/index.ts: its types
 * are not a stable API yet): loads the repositories into the plugin, then
 * listens on each transport asked for (HTTP, gRPC, metrics). stop() refuses
 * new requests, lets running ones finish, closes the listeners, the models
 * and the plugin, in that order.
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
  /** undefined: no metrics service (--allow-metrics=false). */
  readonly metricsPort?: number;
  readonly maxRequestSize: number;
  /** The bytes of request bodies held across all requests (default: 8 bodies of maxRequestSize, at most 1 GiB). */
  readonly maxBufferedBytes?: number;
  readonly log?: (entry: RequestLog) => void;
  /** The log settings the log endpoints report and change (the writers of `log`, `onModel`, `onInstanceEvent` consult them). */
  readonly logSettings?: LogSettings;
  /** What the server metadata names the server (default: popef-toolkit and its version). */
  readonly identity?: ServerIdentity;
  readonly onModel?: (model: ServedModel) => void;
  /** Triton's --model-control-mode and its options (default: none). */
  readonly modelControl?: ModelControlOptions;
  /** An instance failed, was restarted or given up (the CLI logs it). */
  readonly onInstanceEvent?: (event: InstanceEvent) => void;
  /** A finding about a repository as a whole, met as it is loaded (the CLI logs it). */
  readonly onRepositoryFinding?: (root: string, finding: Finding) => void;
}

export interface RunningServer {
  readonly core: InferenceServer;
  readonly httpPort?: number;
  readonly grpcPort?: number;
  readonly metricsPort?: number;
  /** Every transport listening, by name ('HTTP', 'gRPC', 'metrics'), with the port it bound. */
  readonly ports: ReadonlyMap<string, number>;
  stop(): Promise<void>;
}

/** A transport the options ask for, with the port asked for. */
interface Planned {
  readonly transport: Transport;
  readonly port: number;
}

/** The transports of a server, in the order they listen; one more protocol is one more entry. */
function plan(core: InferenceServer, options: ServeOptions, budget: BodyBudget): Planned[] {
  const transportOptions: TransportOptions = { maxRequestSize: options.maxRequestSize, budget, log: options.log };
  const wanted: [number | undefined, () => Transport][] = [
    [options.httpPort, () => new HttpTransport(core, transportOptions)],
    [options.grpcPort, () => new GrpcTransport(core, transportOptions)],
    [options.metricsPort, () => new MetricsTransport(core, transportOptions)],
  ];
  return wanted.flatMap(([port, make]) => (port === undefined ? [] : [{ transport: make(), port }]));
}

function portError(error: unknown, transport: Transport, host: string, port: number): PopefError {
  const code = (error as NodeJS.ErrnoException).code;
  const { name, portFlag } = transport;
  if (code === 'EADDRINUSE') {
    return new PopefError(ErrorCode.Io, `cannot serve ${name} on ${host}:${port}: the port is in use`, {
      suggestion: `stop what listens there, or choose another port with ${portFlag} (0 picks a free one)`,
    });
  }
  return new PopefError(ErrorCode.Io, `cannot serve ${name} on ${host}:${port}: ${(error as Error).message}`, {
    suggestion: `check --host and ${portFlag}`,
  });
}

export async function startServer(options: ServeOptions): Promise<RunningServer> {
  const repository = new ModelRepository();
  const loadOptions = {
    createPlugin: options.createPlugin,
    models: options.models,
    pluginOptions: options.pluginOptions,
    onModel: options.onModel,
    onInstanceEvent: options.onInstanceEvent,
    onRepositoryFinding: options.onRepositoryFinding,
  };
  const control = new ModelControl(repository, options.repositories, loadOptions, options.modelControl ?? { mode: 'none' });
  const core = new InferenceServer(repository, control, options.logSettings, options.identity);
  const budget = new BodyBudget(options.maxBufferedBytes ?? Math.max(options.maxRequestSize, Math.min(8 * options.maxRequestSize, 1024 ** 3)));
  const transports = plan(core, options, budget);
  const closeAll = (): Promise<unknown> => Promise.allSettled(transports.map(({ transport }) => transport.close()));
  // Listen first, so that a port in use fails at once, and clients see "not ready" while models load.
  const ports = new Map<string, number>();
  try {
    for (const { transport, port } of transports) {
      ports.set(
        transport.name,
        await transport.listen(port, options.host).catch((e: unknown) => Promise.reject(portError(e, transport, options.host, port))),
      );
    }
    await control.start();
  } catch (error) {
    await Promise.allSettled([closeAll(), control.stop(), repository.close()]);
    throw error;
  }
  let stopping: Promise<void> | undefined;
  return {
    core,
    httpPort: ports.get('HTTP'),
    grpcPort: ports.get('gRPC'),
    metricsPort: ports.get('metrics'),
    ports,
    stop: () => {
      stopping ??= (async () => {
        core.stopAccepting();
        // Idle and half-sent connections close now; running requests finish, then whatever is left is cut.
        const closed = closeAll();
        await Promise.allSettled([control.stop(), repository.idle()]);
        for (const { transport } of transports) transport.closeAll();
        await closed;
        await repository.close();
        core.sharedMemory.close();
      })();
      return stopping;
    },
  };
}
