import { toInt, type ProtocolMessage } from '../triton/inference-protocol.js';
import { configToProtoObject } from './config-json.js';
import { statisticsReport, type InferenceServer } from './inference-server.js';
import { RequestError, invalidArg } from './status.js';
import { grpcBadLogFormat, type LogUpdateReader } from './log-settings.js';
import type { TraceUpdateReader } from './trace-settings.js';
import type { Cancellation } from './cancellation.js';

/**
 * The unary methods of inference.GRPCInferenceService
 * (schemas/grpc_service.proto): for each, its request and response
 * message types and the handler that answers from the transport-neutral
 * core, with the reading of each request's fields as Triton's gRPC frontend
 * reads them (server r24.10, src/grpc/grpc_server.cc). ModelInfer's
 * conversion and ModelStreamInfer are in grpc-transport.ts.
 */

type Message = ProtocolMessage;

function str(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

/** Which member of an InferParameter's oneof is set ('' for none). */
function choiceOf(parameter: Message): string {
  return str(parameter.parameter_choice);
}

/** `signal` is aborted when the call is cancelled or passes its deadline. */
export type Handler = (request: Message, signal: Cancellation) => Message | Promise<Message>;

/** One method: its request and response types, its handler, and whether the response is encoded via fromObject (enum names). */
export interface MethodSpec {
  readonly request: string;
  readonly response: string;
  readonly handle: Handler;
  readonly viaFromObject?: boolean;
}

/** A map<string, RegionStatus> of the shared-memory status answers. */
function regionMap<T extends { name: string }>(regions: readonly T[], entry: (r: T) => Message): Message {
  return { regions: Object.fromEntries(regions.map((r) => [r.name, entry(r)])) };
}

/** The parameters of a load request, as Triton's frontend takes them ('config' and 'file:...'). */
function loadParameters(params: Record<string, Message>): { config?: string; files: Map<string, Uint8Array> } {
  let config: string | undefined;
  const files = new Map<string, Uint8Array>();
  for (const [key, value] of Object.entries(params)) {
    if (key === 'config') {
      if (choiceOf(value) !== 'string_param') throw invalidArg(`invalid value type for load parameter '${key}', expected string_param.`);
      config = str(value.string_param);
    } else if (key.startsWith('file:')) {
      if (choiceOf(value) !== 'bytes_param') throw invalidArg(`invalid value type for load parameter '${key}', expected bytes_param.`);
      files.set(key, value.bytes_param as Uint8Array);
    } else throw invalidArg(`unrecognized load parameter '${key}'.`);
  }
  return { config, files };
}

/** The unload parameters' one check (unload_dependents is a bool; with no ensembles served it changes nothing). */
function checkUnloadParameters(params: Record<string, Message>): void {
  const value = params.unload_dependents;
  if (value !== undefined && choiceOf(value) !== 'bool_param')
    throw invalidArg("invalid value type for 'unload_dependents' parameter, expected bool_param.");
}

/** The settings of a LogSettingsRequest, read as RegisterLogging reads them: each by the member of its oneof. */
function logReader(settings: Record<string, Message>): LogUpdateReader {
  const take = (key: string, choice: string, what: string): Message | undefined => {
    const value = settings[key];
    if (value === undefined) return undefined;
    if (choiceOf(value) !== choice) throw invalidArg(`expect ${what} for '${key}'`);
    return value;
  };
  return {
    logFile: () => settings.log_file !== undefined,
    bool: (key) => {
      const v = take(key, 'bool_param', 'boolean');
      return v === undefined ? undefined : v.bool_param === true;
    },
    uint: (key) => {
      const v = take(key, 'uint32_param', 'int32');
      return v === undefined ? undefined : toInt(v.uint32_param);
    },
    string: (key) => {
      const v = take(key, 'string_param', 'string');
      return v === undefined ? undefined : str(v.string_param);
    },
    badFormat: grpcBadLogFormat,
  };
}

/** LogSettings: an update when the request has settings, then the settings in the response's oneofs. */
function logSettings(core: InferenceServer, request: Message): Message {
  const settings = (request.settings ?? {}) as Record<string, Message>;
  if (Object.keys(settings).length > 0) core.logSettings.update(logReader(settings));
  const r = core.logSettings.report();
  return {
    settings: {
      log_file: { string_param: r.log_file },
      log_info: { bool_param: r.log_info },
      log_warning: { bool_param: r.log_warning },
      log_error: { bool_param: r.log_error },
      log_verbose_level: { uint32_param: r.log_verbose_level },
      log_format: { string_param: r.log_format },
    },
  };
}

/** The settings of a TraceSettingRequest: lists of strings, an empty one clearing its field. */
function traceReader(settings: Record<string, Message>): TraceUpdateReader {
  const values = (key: string): string[] | undefined => {
    const v = settings[key];
    return v === undefined ? undefined : list(v.value).map(str);
  };
  return {
    has: (key) => settings[key] !== undefined,
    list: (key) => {
      const v = values(key);
      return v === undefined ? undefined : v.length === 0 ? null : v;
    },
    scalar: (key) => {
      const v = values(key);
      if (v === undefined) return undefined;
      if (v.length > 1) throw invalidArg(`expect only 1 value for '${key}'`);
      return v[0] ?? null;
    },
    text: str,
    spaceBeforeCount: true,
  };
}

/** TraceSetting: the model is checked first, then an update when there are settings; every value goes back as a list. */
function traceSetting(core: InferenceServer, request: Message): Message {
  const model = str(request.model_name);
  const settings = (request.settings ?? {}) as Record<string, Message>;
  const report = core.traceSettings(model, Object.keys(settings).length > 0 ? traceReader(settings) : undefined);
  return {
    settings: Object.fromEntries(Object.entries(report).map(([key, value]) => [key, { value: Array.isArray(value) ? value : [value] }])),
  };
}

function noRepositoryName(request: Message): void {
  if (str(request.repository_name) !== '') throw new RequestError('UNSUPPORTED', "'repository_name' specification is not supported");
}

/** The unary methods by name; `infer` answers ModelInfer. */
export function unaryMethods(core: InferenceServer, infer: Handler): Record<string, MethodSpec> {
  const shm = core.sharedMemory;
  const table: Record<string, [string, string, Handler, boolean?]> = {
    ServerLive: ['ServerLiveRequest', 'ServerLiveResponse', () => ({ live: core.live() })],
    ServerReady: ['ServerReadyRequest', 'ServerReadyResponse', () => ({ ready: core.ready() })],
    ModelReady: ['ModelReadyRequest', 'ModelReadyResponse', (r) => ({ ready: core.modelReady(str(r.name), str(r.version)) })],
    ServerMetadata: ['ServerMetadataRequest', 'ServerMetadataResponse', () => ({ ...core.metadata() })],
    ModelMetadata: ['ModelMetadataRequest', 'ModelMetadataResponse', (r) => ({ ...core.modelMetadata(str(r.name), str(r.version)) })],
    ModelConfig: [
      'ModelConfigRequest',
      'ModelConfigResponse',
      (r) => ({ config: configToProtoObject(core.model(str(r.name), str(r.version)).config ?? {}) }),
      true,
    ],
    ModelStatistics: ['ModelStatisticsRequest', 'ModelStatisticsResponse', (r) => statisticsReport(core.statistics(str(r.name), str(r.version)))],
    RepositoryIndex: [
      'RepositoryIndexRequest',
      'RepositoryIndexResponse',
      async (r) => (noRepositoryName(r), { models: await core.repositoryIndex(r.ready === true) }),
    ],
    RepositoryModelLoad: [
      'RepositoryModelLoadRequest',
      'RepositoryModelLoadResponse',
      async (r) => {
        noRepositoryName(r);
        await core.loadModel(str(r.model_name), loadParameters((r.parameters ?? {}) as Record<string, Message>));
        return {};
      },
    ],
    RepositoryModelUnload: [
      'RepositoryModelUnloadRequest',
      'RepositoryModelUnloadResponse',
      async (r) => {
        noRepositoryName(r);
        checkUnloadParameters((r.parameters ?? {}) as Record<string, Message>);
        await core.unloadModel(str(r.model_name));
        return {};
      },
    ],
    SystemSharedMemoryStatus: [
      'SystemSharedMemoryStatusRequest',
      'SystemSharedMemoryStatusResponse',
      (r) => regionMap(shm.systemStatus(str(r.name)), (x) => ({ name: x.name, key: x.key, offset: x.offset, byte_size: x.byteSize })),
    ],
    SystemSharedMemoryRegister: [
      'SystemSharedMemoryRegisterRequest',
      'SystemSharedMemoryRegisterResponse',
      (r) => {
        shm.registerSystem(str(r.name), str(r.key), toInt(r.offset), toInt(r.byte_size));
        return {};
      },
    ],
    SystemSharedMemoryUnregister: [
      'SystemSharedMemoryUnregisterRequest',
      'SystemSharedMemoryUnregisterResponse',
      (r) => (shm.unregisterSystem(str(r.name)), {}),
    ],
    CudaSharedMemoryStatus: [
      'CudaSharedMemoryStatusRequest',
      'CudaSharedMemoryStatusResponse',
      (r) => regionMap(shm.cudaStatus(str(r.name)), (x) => ({ name: x.name, device_id: x.deviceId, byte_size: x.byteSize })),
    ],
    CudaSharedMemoryRegister: ['CudaSharedMemoryRegisterRequest', 'CudaSharedMemoryRegisterResponse', () => shm.registerCuda()],
    CudaSharedMemoryUnregister: ['CudaSharedMemoryUnregisterRequest', 'CudaSharedMemoryUnregisterResponse', () => (shm.unregisterCuda(), {})],
    ModelInfer: ['ModelInferRequest', 'ModelInferResponse', infer],
    LogSettings: ['LogSettingsRequest', 'LogSettingsResponse', (r) => logSettings(core, r)],
    TraceSetting: ['TraceSettingRequest', 'TraceSettingResponse', (r) => traceSetting(core, r)],
  };
  return Object.fromEntries(
    Object.entries(table).map(([name, [request, response, handle, viaFromObject]]) => [name, { request, response, handle, viaFromObject }]),
  );
}
