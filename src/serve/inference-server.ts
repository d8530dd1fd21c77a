import type { BodyBudget } from './body-budget.js';
import { VERSION } from '../version.js';
import { logRequest, normalizeRequest, respond, type InferRequest, type ResponseOutput } from './infer-request.js';
import type { IndexEntry, LoadParameters, ModelControl } from './model-control.js';
import { modelVersionFromString, type ModelRepository } from './model-repository.js';
import type { ModelStats, ServedModel } from './served-model.js';
import { LogSettings } from './log-settings.js';
import { SharedMemoryRegistry } from './shared-memory.js';
import { RequestError, ResponseError, asRequestError, invalidArg } from './status.js';
import { TraceSettings, type TraceReport, type TraceUpdateReader } from './trace-settings.js';

/**
 * The server's answers, independent of the transport: what the HTTP and
 * gRPC endpoints both return, computed once. Transports translate requests
 * into these calls and answers (or RequestErrors) into their wire format.
 */

export interface TensorMetadata {
  readonly name: string;
  readonly datatype: string;
  readonly shape: readonly number[];
}

export interface ModelMetadata {
  readonly name: string;
  readonly versions: readonly string[];
  readonly platform: string;
  readonly inputs: readonly TensorMetadata[];
  readonly outputs: readonly TensorMetadata[];
}

export type { IndexEntry } from './model-control.js';

export interface InferResult {
  readonly modelName: string;
  readonly modelVersion: string;
  readonly id: string;
  readonly outputs: readonly ResponseOutput[];
}

/** One request, as --json-logs writes it (status: HTTP's, or gRPC's code). */
export interface RequestLog {
  readonly transport: 'http' | 'grpc';
  readonly method: string;
  readonly model?: string;
  readonly status: number;
  readonly ms: number;
  readonly error?: string;
}

export interface TransportOptions {
  readonly maxRequestSize: number;
  /** The bytes of request bodies held across all requests (body-budget.ts). */
  readonly budget?: BodyBudget;
  readonly log?: (entry: RequestLog) => void;
}

/**
 * The protocol extensions served: Triton's names, in the order its
 * ServerMetadata lists them (core r24.10, server.cc), only those implemented
 * here ('parameters': request parameters are read as Triton reads them;
 * 'cuda_shared_memory': answered as a server without GPUs answers, as
 * Triton's CPU builds list it too; 'trace': the settings, no trace is
 * written; 'model_repository(unload_dependents)': the parameter is taken,
 * and with no ensembles served no model has dependents; 'schedule_policy':
 * the `priority` and `timeout` request parameters, which the dynamic
 * batcher honours; 'sequence': the sequence_id, sequence_start and
 * sequence_end parameters, which the sequence batcher honours for models
 * with sequence_batching, scheduler/sequence-scheduler.ts).
 */
export const EXTENSIONS = [
  'classification',
  'sequence',
  'model_repository',
  'model_repository(unload_dependents)',
  'schedule_policy',
  'model_configuration',
  'system_shared_memory',
  'cuda_shared_memory',
  'binary_tensor_data',
  'parameters',
  'statistics',
  'trace',
  'logging',
];

/** The name and version the server metadata gives. */
export interface ServerIdentity {
  readonly name: string;
  readonly version: string;
}

/** popef serve as itself: what it is by default. */
export const OWN_IDENTITY: ServerIdentity = { name: 'popef-toolkit', version: VERSION };

/**
 * The Triton release whose protocol, rules and messages popef serve
 * mirrors (Triton 24.10: core r24.10, server 2.51.0), as its server
 * metadata names it: given with `popef serve --as-triton`, for client code
 * that checks the server's name or version before it talks to it.
 */
export const MIRRORED_TRITON: ServerIdentity = { name: 'triton', version: '2.51.0' };

export class InferenceServer {
  readonly repository: ModelRepository;
  /** The shared-memory regions clients registered (both transports share them, as in Triton). */
  readonly sharedMemory = new SharedMemoryRegistry();
  /** What the log endpoints report and change; the server's writers ask it before each record. */
  readonly logSettings: LogSettings;
  private readonly trace = new TraceSettings();
  private readonly control: ModelControl | undefined;
  private stopping = false;

  constructor(
    repository: ModelRepository,
    control?: ModelControl,
    logSettings: LogSettings = new LogSettings(),
    private readonly identity: ServerIdentity = OWN_IDENTITY,
  ) {
    this.repository = repository;
    this.control = control;
    this.logSettings = logSettings;
  }

  /**
   * The trace settings of a model ('' for the global ones), after the
   * update `change` asks for, if any. A model must be ready in some
   * version, as HandleTrace checks (with its message, space included).
   */
  traceSettings(model: string, change?: TraceUpdateReader): TraceReport {
    if (model !== '' && !this.repository.isReady(model, '')) throw invalidArg(`Request for unknown model : ${model}`);
    if (change !== undefined) this.trace.update(model, change);
    return this.trace.report(model);
  }

  live(): boolean {
    return true;
  }

  ready(): boolean {
    return this.repository.ready && !this.stopping;
  }

  /** New requests are refused from now on; running ones finish. */
  stopAccepting(): void {
    this.stopping = true;
  }

  metadata(): { name: string; version: string; extensions: readonly string[] } {
    return { name: this.identity.name, version: this.identity.version, extensions: EXTENSIONS };
  }

  modelReady(name: string, version: string): boolean {
    return this.repository.isReady(name, version);
  }

  modelMetadata(name: string, version: string): ModelMetadata {
    const model = this.repository.get(name, version);
    const withBatch = (dims: readonly number[]): number[] => (model.maxBatchSize > 0 ? [-1, ...dims] : [...dims]);
    return {
      name: model.name,
      versions: [model.version],
      // Triton reports the backend's name for a model that names no platform.
      platform: (model.config?.platform ?? '') !== '' ? (model.config?.platform ?? '') : (model.config?.backend ?? ''),
      inputs: model.inputs.map((t) => ({ name: t.name, datatype: t.datatype, shape: withBatch(t.dims) })),
      outputs: model.outputs.map((t) => ({ name: t.name, datatype: t.datatype, shape: withBatch(t.dims) })),
    };
  }

  model(name: string, version: string): ServedModel {
    return this.repository.get(name, version);
  }

  /** The loaded models (and those refused), without the model directories never loaded. */
  index(): IndexEntry[] {
    return this.repository.list().map((m) => ({ name: m.name, version: m.version, state: this.repository.stateOf(m), reason: m.reason }));
  }

  /** Triton's repository index: every model directory, with the state of what was loaded. */
  async repositoryIndex(readyOnly: boolean): Promise<IndexEntry[]> {
    if (this.control !== undefined) return this.control.index(readyOnly);
    return this.index().filter((e) => !readyOnly || e.state === 'READY');
  }

  async loadModel(name: string, parameters: LoadParameters): Promise<void> {
    this.refuseWhileStarting();
    if (this.control === undefined) throw new RequestError('UNAVAILABLE', 'explicit model load / unload is not allowed if polling is enabled');
    await this.control.load(name, parameters);
  }

  /** Triton's unload_dependents changes nothing here: no ensembles are served, so a model has no dependents. */
  async unloadModel(name: string): Promise<void> {
    this.refuseWhileStarting();
    if (this.control === undefined) throw new RequestError('UNAVAILABLE', 'explicit model load / unload is not allowed if polling is enabled');
    await this.control.unload(name);
  }

  private refuseWhileStarting(): void {
    if (!this.repository.ready || this.stopping) throw new RequestError('UNAVAILABLE', 'Server not ready');
  }

  /** Statistics of one model, or of every ready model when the name is empty. */
  statistics(name: string, version: string): { name: string; version: string; stats: ModelStats }[] {
    const ready = this.repository.list().filter((m) => m.ready && (name === '' || m.name === name));
    let models = ready;
    // As TRITONSERVER_ServerModelStatistics (core r24.10, tritonserver.cc): a model or version with nothing ready is a bad argument.
    const requested = modelVersionFromString(version);
    if (name !== '') {
      if (ready.length === 0) throw invalidArg(`requested model '${name}' is not available`);
      if (requested !== -1n) {
        models = ready.filter((m) => m.version === requested.toString());
        if (models.length === 0) throw invalidArg(`requested model version is not available for model '${name}'`);
      }
    }
    return models.map((m) => ({ name: m.name, version: m.version, stats: m.stats }));
  }

  async infer(request: InferRequest): Promise<InferResult> {
    if (this.stopping) throw new RequestError('UNAVAILABLE', 'Server is stopping');
    const model = this.repository.get(request.modelName, request.modelVersion);
    const normalized = normalizeRequest(model, request);
    // The output regions stay registered until the answer is written to them.
    const release = this.sharedMemory.hold(request.outputs.flatMap((o) => (o.region === undefined ? [] : [o.region])));
    try {
      // The sequence batcher's enqueue checks throw here, as Triton's Enqueue errors come back from the call itself.
      const pending = model.execute({
        batch: normalized.batch,
        tensors: normalized.tensors,
        priority: request.priority,
        timeoutUs: request.timeoutUs,
        signal: request.signal,
        sequence: request.sequence,
        logPrefix: logRequest(request),
      });
      let results;
      try {
        results = await pending;
      } catch (error) {
        // Errors after the request was issued come back in its response (a stream keeps them apart).
        if (error instanceof RequestError) throw new ResponseError(error.status, error.message);
        // The plugin's failure is this request's (or this batch's) alone: INTERNAL, as Triton answers a backend
        // error; the model stays READY (the scheduler replaces an instance whose plugin failed).
        const message = error instanceof Error ? error.message : String(error);
        throw new ResponseError('INTERNAL', `execution plugin failed for model '${model.name}': ${message}`);
      }
      let outputs;
      try {
        outputs = respond(model, normalized, results).map((o) => this.toSharedMemory(o));
      } catch (error) {
        const e = asRequestError(error);
        throw new ResponseError(e.status, e.message);
      }
      return { modelName: model.name, modelVersion: model.version, id: request.id, outputs };
    } finally {
      release();
    }
  }

  /** An output asked for in shared memory is written there, when it fits (Triton's ResponseAllocatorHelper). */
  private toSharedMemory(output: ResponseOutput): ResponseOutput {
    const region = output.region;
    if (region === undefined || output.data.byteLength === 0) return { ...output, region: undefined };
    if (output.data.byteLength > region.byteSize) {
      throw new RequestError(
        'INTERNAL',
        `shared memory size specified with the request for output '${output.name}' (${region.byteSize} bytes) should be at least ${output.data.byteLength} bytes to hold the results`,
      );
    }
    this.sharedMemory.write(region, output.data);
    return { ...output, data: new Uint8Array(0) };
  }
}

function duration(d: { count: number; ns: bigint }): { count: number; ns: number } {
  return { count: d.count, ns: Number(d.ns) };
}

/**
 * Triton's ModelStatisticsResponse as a plain object with the protocol's
 * field names: the JSON of GET /v2/models/{m}/stats, and what the gRPC
 * transport encodes (the fields its .proto lacks are left out by the codec).
 */
export function statisticsReport(entries: readonly { name: string; version: string; stats: ModelStats }[]): Record<string, unknown> {
  return {
    model_stats: entries.map(({ name, version, stats: s }) => ({
      name,
      version,
      last_inference: s.lastInference,
      inference_count: s.inferenceCount,
      execution_count: s.executionCount,
      inference_stats: {
        success: duration(s.success),
        fail: duration(s.fail),
        queue: duration(s.queue),
        compute_input: { count: s.success.count, ns: 0 },
        compute_infer: duration(s.computeInfer),
        compute_output: { count: s.success.count, ns: 0 },
        cache_hit: { count: 0, ns: 0 },
        cache_miss: { count: 0, ns: 0 },
      },
      response_stats: {},
      batch_stats: [...s.batches.entries()]
        .sort((a, b) => a[0] - b[0])
        .map(([size, b]) => ({
          batch_size: size,
          compute_input: { count: b.count, ns: 0 },
          compute_infer: duration(b),
          compute_output: { count: b.count, ns: 0 },
        })),
      memory_usage: [],
    })),
  };
}
