import {
  Server,
  ServerCredentials,
  logVerbosity,
  setLogVerbosity,
  status as GrpcStatus,
  type ServerDuplexStream,
  type ServerUnaryCall,
  type ServiceDefinition,
  type UntypedServiceImplementation,
  type sendUnaryData,
} from '@grpc/grpc-js';
import { protocolCodec as codec, toInt, type ProtocolMessage } from '../triton/inference-protocol.js';
import { configToProtoObject } from './config-json.js';
import { isProtocolDataType, protocolElementBytes } from '../triton/protocol-datatypes.js';
import { serializeBytes, type InferRequest, type RequestInput, type RequestedOutput } from './infer-request.js';
import { statisticsReport, type InferenceServer, type InferResult, type RequestLog, type TransportOptions } from './inference-server.js';
import { SharedMemoryRegistry, type RegionSlice } from './shared-memory.js';
import { RequestError, ResponseError, asRequestError, invalidArg, type StatusCode } from './status.js';
import { TransportBase } from './transport.js';
import { grpcRequestParameters } from './grpc-parameters.js';
import { grpcBadLogFormat, type LogUpdateReader } from './log-settings.js';
import type { TraceUpdateReader } from './trace-settings.js';
import { constants as http2Constants, type IncomingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import type { BodyBudget, BodyReservation } from './body-budget.js';

/**
 * Triton's gRPC service, inference.GRPCInferenceService, on @grpc/grpc-js
 * with protobufjs as the message codec (schemas/grpc_service.proto, read at
 * start). Requests become the transport-neutral calls of InferenceServer;
 * input data comes from raw_input_contents or typed contents with the
 * rules of Triton's gRPC frontend (server r24.10, grpc/infer_handler.cc),
 * outputs always go back as raw_output_contents, as Triton sends them.
 */

type Message = ProtocolMessage;

/** Triton's error classes as gRPC status codes (server r24.10, grpc_utils.cc). */
const GRPC_STATUS: Readonly<Record<StatusCode, GrpcStatus>> = {
  UNKNOWN: GrpcStatus.UNKNOWN,
  INTERNAL: GrpcStatus.INTERNAL,
  NOT_FOUND: GrpcStatus.NOT_FOUND,
  INVALID_ARG: GrpcStatus.INVALID_ARGUMENT,
  UNAVAILABLE: GrpcStatus.UNAVAILABLE,
  UNSUPPORTED: GrpcStatus.UNIMPLEMENTED,
  ALREADY_EXISTS: GrpcStatus.ALREADY_EXISTS,
  CANCELLED: GrpcStatus.CANCELLED,
};

function str(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

/** Typed contents of one input as bytes, with the frontend's checks (InferGRPCToInputHelper). */
function contentsToBytes(input: Message, model: string): Uint8Array {
  const name = str(input.name);
  const datatype = str(input.datatype);
  const contents = (input.contents ?? {}) as Message;
  const kinds: [string, string][] = [
    ['bool_contents', 'BOOL'],
    ['int_contents', datatype === 'INT8' ? 'INT8' : datatype === 'INT16' ? 'INT16' : 'INT32'],
    ['int64_contents', 'INT64'],
    ['uint_contents', datatype === 'UINT8' ? 'UINT8' : datatype === 'UINT16' ? 'UINT16' : 'UINT32'],
    ['uint64_contents', 'UINT64'],
    ['fp32_contents', 'FP32'],
    ['fp64_contents', 'FP64'],
    ['bytes_contents', 'BYTES'],
  ];
  let out: Uint8Array | undefined;
  for (const [field, tensorType] of kinds) {
    const values = list(contents[field]);
    if (values.length === 0) continue;
    if (out !== undefined)
      throw invalidArg(`unexpected explicit tensor data for input tensor '${name}' for model '${model}', binary data was already supplied.`);
    if (tensorType !== datatype) {
      throw invalidArg(
        `unexpected explicit tensor data for input tensor '${name}' for model '${model}' of type '${tensorType}', expected datatype '${isProtocolDataType(datatype) ? datatype : '<invalid>'}'`,
      );
    }
    if (tensorType === 'BYTES') {
      out = serializeBytes(values as Uint8Array[]);
      continue;
    }
    const size = protocolElementBytes(tensorType as 'FP32');
    const b = new Uint8Array(values.length * size);
    // DataView setters keep the low bytes of a value that does not fit, as
    // Triton does (it copies the least significant bytes of each int32 for
    // INT8 and INT16); Buffer's writers would throw a RangeError instead.
    const view = new DataView(b.buffer);
    values.forEach((v, i) => {
      const at = i * size;
      switch (tensorType) {
        case 'BOOL':
          view.setUint8(at, v === true ? 1 : 0);
          break;
        case 'INT8':
          view.setInt8(at, toInt(v));
          break;
        case 'INT16':
          view.setInt16(at, toInt(v), true);
          break;
        case 'INT32':
          view.setInt32(at, toInt(v), true);
          break;
        case 'INT64':
          view.setBigInt64(at, BigInt(String(v)), true);
          break;
        case 'UINT8':
          view.setUint8(at, toInt(v));
          break;
        case 'UINT16':
          view.setUint16(at, toInt(v), true);
          break;
        case 'UINT32':
          view.setUint32(at, toInt(v), true);
          break;
        case 'UINT64':
          view.setBigUint64(at, BigInt(String(v)), true);
          break;
        case 'FP32':
          view.setFloat32(at, Number(v), true);
          break;
        default:
          view.setFloat64(at, Number(v), true);
      }
    });
    out = b;
  }
  if (out === undefined) throw invalidArg(`unable to find data for input tensor '${name}' for model '${model}' in request.`);
  return out;
}

/** An int64 shape as numbers, and exactly as well when a dimension is past 2^53 (a Long's decimal text is exact). */
function grpcShape(dims: readonly unknown[]): { shape: number[]; exactShape?: bigint[] } {
  const shape = dims.map(toInt);
  if (shape.every(Number.isSafeInteger)) return { shape };
  return { shape, exactShape: dims.map((d) => BigInt(String(d))) };
}

/** Which member of an InferParameter's oneof is set ('' for none). */
function choiceOf(parameter: Message): string {
  return str(parameter.parameter_choice);
}

/**
 * The shared-memory parameters of one input or requested output, with the
 * frontend's checks and messages (ParseSharedMemoryParams, grpc_utils.h):
 * undefined when the tensor names no region.
 */
function sharedMemoryParams(tensor: Message): RegionSlice | undefined {
  const name = str(tensor.name);
  const params = (tensor.parameters ?? {}) as Record<string, Message>;
  const region = params.shared_memory_region;
  const offset = params.shared_memory_offset;
  const size = params.shared_memory_byte_size;
  if (region !== undefined && choiceOf(region) !== 'string_param') {
    throw invalidArg(`invalid value type for 'shared_memory_region' parameter for tensor '${name}', expected string_param.`);
  }
  const check = (p: Message | undefined, key: string): number => {
    if (p === undefined) return 0;
    if (region === undefined) throw invalidArg(`'${key}' can not be specified without 'shared_memory_region' parameter for tensor '${name}'`);
    if (choiceOf(p) !== 'int64_param') throw invalidArg(`invalid value type for '${key}' parameter for tensor '${name}', expected int64_param.`);
    return toInt(p.int64_param);
  };
  const at = check(offset, 'shared_memory_offset');
  const byteSize = check(size, 'shared_memory_byte_size');
  if (region === undefined) return undefined;
  if (size === undefined)
    throw invalidArg(`'shared_memory_byte_size' must be specified along with 'shared_memory_region' parameter for tensor '${name}'`);
  return { region: str(region.string_param), offset: at, byteSize };
}

/**
 * ModelInferRequest -> InferRequest, as Triton's gRPC frontend reads it
 * (InferGRPCToInput, then InferAllocatorPayload for the outputs). Inputs in
 * shared memory are read from the registry's regions; outputs in shared
 * memory carry their region to the core, which writes them there.
 */
export function fromModelInferRequest(message: Message, sharedMemory: SharedMemoryRegistry = new SharedMemoryRegistry()): InferRequest {
  const model = str(message.model_name);
  const raw = list(message.raw_input_contents) as Uint8Array[];
  const { priority, timeoutUs } = grpcRequestParameters((message.parameters ?? {}) as Record<string, Message>);
  const scheduling = { ...(priority === undefined ? {} : { priority }), ...(timeoutUs === undefined ? {} : { timeoutUs }) };
  const inputs: RequestInput[] = [];
  let index = 0;
  for (const item of list(message.inputs)) {
    const input = item as Message;
    const name = str(input.name);
    const slice = sharedMemoryParams(input);
    const hasContents = input.contents !== undefined && input.contents !== null;
    let data: Uint8Array;
    if (slice !== undefined) {
      if (hasContents) throw invalidArg(`unexpected 'content' provided when using shared memory for input tensor '${name}' for model '${model}'`);
      data = sharedMemory.read(slice);
    } else if (hasContents && raw.length > 0)
      throw invalidArg(`contents field must not be specified when using raw_input_contents for '${name}' for model '${model}'`);
    else if (hasContents) data = contentsToBytes(input, model);
    else if (index < raw.length) data = raw[index++] ?? new Uint8Array(0);
    else throw invalidArg(`unable to find data for input tensor '${name}' for model '${model}' in request.`);
    inputs.push({ name, datatype: str(input.datatype), data, ...grpcShape(list(input.shape)) });
  }
  if (index !== raw.length) {
    throw invalidArg(`expected ${index} raw_input_contents for model '${model}', got ${raw.length}`);
  }
  const outputs: RequestedOutput[] = list(message.outputs).map((item) => {
    const output = item as Message;
    const region = sharedMemoryParams(output);
    const p = ((output.parameters ?? {}) as Record<string, Message>).classification;
    if (region !== undefined && p !== undefined) throw invalidArg("output can't set both 'shared_memory_region' and 'classification'");
    if (region !== undefined) sharedMemory.check(region);
    return { name: str(output.name), classCount: p === undefined ? 0 : toInt(p.int64_param ?? p.uint64_param ?? 0), region };
  });
  return { modelName: model, modelVersion: str(message.model_version), id: str(message.id), inputs, outputs, ...scheduling };
}

/** An answer as ModelInferResponse; outputs written to shared memory get an empty raw entry, as in Triton. */
function toModelInferResponse(result: InferResult): Message {
  return {
    model_name: result.modelName,
    model_version: result.modelVersion,
    id: result.id,
    outputs: result.outputs.map((o) => ({ name: o.name, datatype: o.datatype, shape: o.shape })),
    raw_output_contents: result.outputs.map((o) => o.data),
  };
}

/** `signal` aborts when the call is cancelled or passes its deadline. */
type Handler = (request: Message, signal: AbortSignal) => Message | Promise<Message>;

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

/**
 * Counts one HTTP/2 stream's bytes (countArrivingBytes). A unary call's
 * message is held until the stream closes; on ModelStreamInfer, a message
 * is counted only while it arrives (the 5-byte gRPC prefix gives its
 * length), so that a long stream of small requests does not add up.
 */
function countStream(stream: ServerHttp2Stream, budget: BodyBudget, streaming: boolean): void {
  let current: BodyReservation = budget.open();
  const prefix = Buffer.alloc(5);
  let prefixSeen = 0;
  let left = 0;
  stream.once('close', () => current.release());
  const messageDone = (): void => {
    prefixSeen = 0;
    if (!streaming) return;
    current.release();
    current = budget.open();
  };
  // grpc-js has its own 'data' listener and pauses the stream between messages; this one only counts.
  stream.on('data', (chunk: Buffer) => {
    try {
      current.take(chunk.byteLength);
    } catch (error) {
      current.release();
      refuseStream(stream, error instanceof Error ? error.message : String(error));
      return;
    }
    for (let i = 0; i < chunk.byteLength;) {
      if (prefixSeen < 5) {
        prefix[prefixSeen++] = chunk[i++] ?? 0;
        if (prefixSeen === 5) {
          left = prefix.readUInt32BE(1);
          if (left === 0) messageDone();
        }
        continue;
      }
      const n = Math.min(left, chunk.byteLength - i);
      i += n;
      left -= n;
      if (left === 0) messageDone();
    }
  });
}

/**
 * Ends a stream the budget has no room for: a trailers-only answer with
 * RESOURCE_EXHAUSTED (what gRPC servers answer a message they cannot hold)
 * and the message, then the stream is closed so that no more of it is read.
 */
function refuseStream(stream: ServerHttp2Stream, message: string): void {
  if (stream.destroyed || stream.closed) return;
  if (!stream.headersSent) {
    stream.respond(
      {
        ':status': 200,
        'content-type': 'application/grpc',
        'grpc-status': String(GrpcStatus.RESOURCE_EXHAUSTED),
        'grpc-message': encodeURIComponent(message),
      },
      { endStream: true },
    );
  }
  stream.close(http2Constants.NGHTTP2_CANCEL);
}

export class GrpcTransport extends TransportBase {
  readonly name = 'gRPC';
  readonly portFlag = '--grpc-port';
  private readonly server: Server;
  /** The http2 servers whose streams are counted (countArrivingBytes). */
  private readonly counted = new Set<object>();

  constructor(core: InferenceServer, options: TransportOptions) {
    super(core, options);
    this.server = new Server({ 'grpc.max_receive_message_length': options.maxRequestSize, 'grpc.max_send_message_length': -1 });
    const shm = core.sharedMemory;
    const handlers: Record<string, [string, string, Handler, boolean?]> = {
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
      ModelInfer: ['ModelInferRequest', 'ModelInferResponse', (r, signal) => this.infer(r, signal)],
      LogSettings: ['LogSettingsRequest', 'LogSettingsResponse', (r) => logSettings(core, r)],
      TraceSetting: ['TraceSettingRequest', 'TraceSettingResponse', (r) => traceSetting(core, r)],
    };
    const definition: Record<string, ServiceDefinition[string]> = {};
    const implementation: UntypedServiceImplementation = {};
    const describe = (method: string, requestType: string, responseType: string, streams: boolean, viaFromObject = false): void => {
      const requestCodec = codec(requestType);
      const responseCodec = codec(responseType, viaFromObject);
      definition[method] = {
        path: `/inference.GRPCInferenceService/${method}`,
        requestStream: streams,
        responseStream: streams,
        requestSerialize: (value: Message) => requestCodec.encode(value),
        requestDeserialize: (bytes: Buffer) => requestCodec.decode(bytes),
        responseSerialize: (value: Message) => responseCodec.encode(value),
        responseDeserialize: (bytes: Buffer) => responseCodec.decode(bytes),
        originalName: method,
      };
    };
    for (const [method, [requestType, responseType, handler, viaFromObject]] of Object.entries(handlers)) {
      describe(method, requestType, responseType, false, viaFromObject === true);
      implementation[method] = (call: ServerUnaryCall<Message, Message>, callback: sendUnaryData<Message>) => {
        // grpc-js cancels the call when the client does and when its deadline passes, and also after every answer
        // it sent (its notifyOnCancel): only a call not yet answered is aborted, so that no answer costs an abort.
        const client = new AbortController();
        let answered = false;
        call.once('cancelled', () => {
          if (!answered) client.abort();
        });
        void this.answer(
          method,
          call.request,
          (r) => handler(r, client.signal),
          (error, value) => {
            answered = true;
            callback(error, value);
          },
        );
      };
    }
    describe('ModelStreamInfer', 'ModelInferRequest', 'ModelStreamInferResponse', true);
    implementation.ModelStreamInfer = (call: ServerDuplexStream<Message, Message>) => {
      this.stream(call);
    };
    this.server.addService(definition, implementation);
  }

  private async infer(request: Message, signal?: AbortSignal): Promise<Message> {
    return toModelInferResponse(await this.core.infer({ ...fromModelInferRequest(request, this.core.sharedMemory), signal }));
  }

  /**
   * ModelStreamInfer for models that are not decoupled (stream_infer_handler.cc):
   * every request gets one answer on the stream, in the order the requests
   * came; an error is an answer too (error_message), and the stream stays
   * open. Answers carry triton_final_response, except those of requests
   * refused before they were issued, which carry only the request's id.
   */
  private stream(call: ServerDuplexStream<Message, Message>): void {
    let previous: Promise<void> = Promise.resolve();
    let ended = false;
    const pending = new Set<Promise<void>>();
    // A stream the client cancels cancels the requests it still has running.
    const client = new AbortController();
    call.once('cancelled', () => client.abort());
    const finishIfDone = (): void => {
      if (ended && pending.size === 0) call.end();
    };
    call.on('data', (request: Message) => {
      const started = performance.now();
      const answer = this.streamAnswer(request, client.signal);
      const write = previous.then(async () => {
        const [response, entry] = await answer;
        if (!call.cancelled && call.writable) call.write(response);
        this.options.log?.({ ...entry, ms: performance.now() - started });
      });
      previous = write;
      pending.add(write);
      void write.finally(() => {
        pending.delete(write);
        finishIfDone();
      });
    });
    call.on('end', () => {
      ended = true;
      finishIfDone();
    });
    call.on('error', () => undefined);
  }

  private async streamAnswer(request: Message, signal: AbortSignal): Promise<[Message, RequestLog]> {
    const model = str(request.model_name) || undefined;
    const final = { triton_final_response: { bool_param: true } };
    try {
      const response = await this.infer(request, signal);
      return [{ infer_response: { ...response, parameters: final } }, { transport: 'grpc', method: 'ModelStreamInfer', model, status: 0, ms: 0 }];
    } catch (error) {
      const e = asRequestError(error);
      const entry: RequestLog = { transport: 'grpc', method: 'ModelStreamInfer', model, status: GRPC_STATUS[e.status], ms: 0, error: e.message };
      const id = str(request.id);
      if (!(e instanceof ResponseError)) return [{ error_message: e.message, infer_response: { id } }, entry];
      return [
        {
          error_message: e.message,
          infer_response: { id, model_name: str(request.model_name), model_version: str(request.model_version), parameters: final },
        },
        entry,
      ];
    }
  }

  private async answer(
    method: string,
    request: Message,
    handler: (request: Message) => Message | Promise<Message>,
    callback: sendUnaryData<Message>,
  ): Promise<void> {
    const started = performance.now();
    const model = str(request.model_name) || str(request.name) || undefined;
    let entry: RequestLog;
    try {
      const response = await handler(request);
      callback(null, response);
      entry = { transport: 'grpc', method, model, status: 0, ms: performance.now() - started };
    } catch (error) {
      const e = asRequestError(error);
      callback({ code: GRPC_STATUS[e.status], details: e.message });
      entry = { transport: 'grpc', method, model, status: GRPC_STATUS[e.status], ms: performance.now() - started, error: e.message };
    }
    this.options.log?.(entry);
  }

  listen(port: number, host: string): Promise<number> {
    return new Promise((resolve, reject) => {
      // A port in use is our own error (server.ts); grpc-js would also print its own "E No address added" line beside it.
      setLogVerbosity(logVerbosity.NONE);
      this.server.bindAsync(`${host.includes(':') ? `[${host}]` : host}:${port}`, ServerCredentials.createInsecure(), (error, bound) => {
        setLogVerbosity(logVerbosity.ERROR);
        if (error === null) {
          this.countArrivingBytes();
          resolve(bound);
        }
        // grpc-js reports a port in use only in its message ("No address added ... errors: [... EADDRINUSE ...]"):
        // it becomes the errno code here, at the one place that knows grpc-js, so that callers branch on the code.
        else
          reject(/EADDRINUSE|address already in use/i.test(error.message) ? Object.assign(new Error(error.message), { code: 'EADDRINUSE' }) : error);
      });
    });
  }

  /**
   * Counts the bytes of every HTTP/2 stream against the server's budget
   * (body-budget.ts) as they arrive, until the stream closes (its answer
   * sent, or the client gone): grpc-js buffers a whole message before it
   * hands it over, so counting decoded messages would come too late (60
   * calls of 60 MiB held 7.3 GB that way). A stream that would pass the
   * budget is answered RESOURCE_EXHAUSTED with the budget's message, and
   * closed, which drops what grpc-js had buffered of it.
   *
   * grpc-js has no public hook for its HTTP/2 streams: its http2 servers are
   * found in its private `http2Servers` map (grpc-js 1.14). When that is not
   * there, nothing is counted; test/hostile/serve-hostile.test.ts fails then.
   */
  private countArrivingBytes(): void {
    const budget = this.options.budget;
    const servers = (this.server as unknown as { http2Servers?: unknown }).http2Servers;
    if (budget === undefined || !(servers instanceof Map)) return;
    for (const server of servers.keys() as IterableIterator<{ on?: unknown }>) {
      if (this.counted.has(server) || typeof server.on !== 'function') continue;
      this.counted.add(server);
      (server as { on(event: 'stream', listener: (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => void): void }).on(
        'stream',
        (stream, headers) => countStream(stream, budget, headers[':path'] === '/inference.GRPCInferenceService/ModelStreamInfer'),
      );
    }
  }

  /** Stops accepting calls and waits for running ones. */
  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.tryShutdown(() => resolve());
    });
  }

  /** Ends every session left, a partial stream included (the running requests are done). */
  closeAll(): void {
    this.server.forceShutdown();
  }
}
