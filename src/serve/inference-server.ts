import { VERSION } from '../version.js';
import { logRequest, normalizeRequest, respond, type InferRequest, type ResponseOutput } from './infer-request.js';
import type { ModelRepository } from './model-repository.js';
import type { ModelStats, ServedModel } from './served-model.js';
import { RequestError, invalidArg } from './status.js';

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

export interface IndexEntry {
  readonly name: string;
  readonly version: string;
  readonly state: string;
  readonly reason: string;
}

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
  readonly log?: (entry: RequestLog) => void;
}

/**
 * The protocol extensions served: Triton's names, in the order its
 * ServerMetadata lists them (core r24.10, server.cc), only those implemented
 * here ('parameters': request parameters are read as Triton reads them).
 */
export const EXTENSIONS = ['classification', 'model_repository', 'model_configuration', 'binary_tensor_data', 'parameters', 'statistics'];

export class InferenceServer {
  readonly repository: ModelRepository;
  private stopping = false;

  constructor(repository: ModelRepository) {
    this.repository = repository;
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
    return { name: 'popef-toolkit', version: VERSION, extensions: EXTENSIONS };
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

  index(): IndexEntry[] {
    return this.repository.list().map((m) => ({ name: m.name, version: m.version, state: m.state, reason: m.reason }));
  }

  /** Statistics of one model, or of every ready model when the name is empty. */
  statistics(name: string, version: string): { name: string; version: string; stats: ModelStats }[] {
    const ready = this.repository.list().filter((m) => m.ready && (name === '' || m.name === name));
    let models = ready;
    // As TRITONSERVER_ServerModelStatistics (core r24.10, tritonserver.cc): a model or version with nothing ready is a bad argument.
    if (name !== '') {
      if (version !== '' && !/^-?\d+$/.test(version)) throw invalidArg(`failed to get model version from specified version string '${version}' (details: stoll)`);
      if (ready.length === 0) throw invalidArg(`requested model '${name}' is not available`);
      if (version !== '' && Number(version) !== -1) {
        models = ready.filter((m) => Number(m.version) === Number(version));
        if (models.length === 0) throw invalidArg(`requested model version is not available for model '${name}'`);
      }
    }
    return models.map((m) => ({ name: m.name, version: m.version, stats: m.stats }));
  }

  async infer(request: InferRequest): Promise<InferResult> {
    if (this.stopping) throw new RequestError('UNAVAILABLE', 'Server is stopping');
    const model = this.repository.get(request.modelName, request.modelVersion);
    const normalized = normalizeRequest(model, request);
    let results;
    try {
      results = await model.execute({
        batch: normalized.batch,
        tensors: normalized.tensors,
        priority: request.priority,
        timeoutUs: request.timeoutUs,
        signal: request.signal,
        logPrefix: logRequest(request),
      });
    } catch (error) {
      if (error instanceof RequestError) throw error;
      // The plugin's failure is this request's (or this batch's) alone: INTERNAL, as Triton answers a backend
      // error; the model stays READY (the scheduler replaces an instance whose plugin failed).
      const message = error instanceof Error ? error.message : String(error);
      throw new RequestError('INTERNAL', `execution plugin failed for model '${model.name}': ${message}`);
    }
    return { modelName: model.name, modelVersion: model.version, id: request.id, outputs: respond(model, normalized, results) };
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
