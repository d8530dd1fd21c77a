import { Server, ServerCredentials, status as GrpcStatus, type ServerUnaryCall, type ServiceDefinition, type UntypedServiceImplementation, type sendUnaryData } from '@grpc/grpc-js';
import { protocolCodec as codec, toInt, type ProtocolMessage } from '../triton/inference-protocol.js';
import { configToProtoObject } from './config-json.js';
import { isProtocolDataType, protocolElementBytes } from '../triton/protocol-datatypes.js';
import { serializeBytes, type InferRequest, type RequestInput, type RequestedOutput } from './infer-request.js';
import { statisticsReport, type InferenceServer, type RequestLog, type TransportOptions } from './inference-server.js';
import { asRequestError, invalidArg, type StatusCode } from './status.js';
import { TransportBase } from './transport.js';
import { grpcRequestParameters } from './grpc-parameters.js';

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
    if (out !== undefined) throw invalidArg(`unexpected explicit tensor data for input tensor '${name}' for model '${model}', binary data was already supplied.`);
    if (tensorType !== datatype) {
      throw invalidArg(`unexpected explicit tensor data for input tensor '${name}' for model '${model}' of type '${tensorType}', expected datatype '${isProtocolDataType(datatype) ? datatype : '<invalid>'}'`);
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

/** ModelInferRequest -> InferRequest, as Triton's gRPC frontend reads it (InferGRPCToInput). */
export function fromModelInferRequest(message: Message): InferRequest {
  const model = str(message.model_name);
  const raw = list(message.raw_input_contents) as Uint8Array[];
  const { priority, timeoutUs } = grpcRequestParameters((message.parameters ?? {}) as Record<string, Message>);
  const scheduling = { ...(priority === undefined ? {} : { priority }), ...(timeoutUs === undefined ? {} : { timeoutUs }) };
  const inputs: RequestInput[] = [];
  let index = 0;
  for (const item of list(message.inputs)) {
    const input = item as Message;
    const name = str(input.name);
    const hasContents = input.contents !== undefined && input.contents !== null;
    if (hasContents && raw.length > 0) throw invalidArg(`contents field must not be specified when using raw_input_contents for '${name}' for model '${model}'`);
    let data: Uint8Array;
    if (hasContents) data = contentsToBytes(input, model);
    else if (index < raw.length) data = raw[index++] ?? new Uint8Array(0);
    else throw invalidArg(`unable to find data for input tensor '${name}' for model '${model}' in request.`);
    inputs.push({ name, datatype: str(input.datatype), shape: list(input.shape).map(toInt), data });
  }
  if (index !== raw.length) {
    throw invalidArg(`expected ${index} raw_input_contents for model '${model}', got ${raw.length}`);
  }
  const outputs: RequestedOutput[] = list(message.outputs).map((item) => {
    const output = item as Message;
    const p = ((output.parameters ?? {}) as Record<string, Message>).classification;
    return { name: str(output.name), classCount: p === undefined ? 0 : toInt(p.int64_param ?? p.uint64_param ?? 0) };
  });
  return { modelName: model, modelVersion: str(message.model_version), id: str(message.id), inputs, outputs, ...scheduling };
}

/** `signal` aborts when the call is cancelled or passes its deadline. */
type Handler = (request: Message, signal: AbortSignal) => Message | Promise<Message>;

export class GrpcTransport extends TransportBase {
  readonly name = 'gRPC';
  readonly portFlag = '--grpc-port';
  private readonly server: Server;

  constructor(core: InferenceServer, options: TransportOptions) {
    super(core, options);
    this.server = new Server({ 'grpc.max_receive_message_length': options.maxRequestSize, 'grpc.max_send_message_length': -1 });
    const handlers: Record<string, [string, string, Handler, boolean?]> = {
      ServerLive: ['ServerLiveRequest', 'ServerLiveResponse', () => ({ live: core.live() })],
      ServerReady: ['ServerReadyRequest', 'ServerReadyResponse', () => ({ ready: core.ready() })],
      ModelReady: ['ModelReadyRequest', 'ModelReadyResponse', (r) => ({ ready: core.modelReady(str(r.name), str(r.version)) })],
      ServerMetadata: ['ServerMetadataRequest', 'ServerMetadataResponse', () => ({ ...core.metadata() })],
      ModelMetadata: ['ModelMetadataRequest', 'ModelMetadataResponse', (r) => ({ ...core.modelMetadata(str(r.name), str(r.version)) })],
      ModelConfig: ['ModelConfigRequest', 'ModelConfigResponse', (r) => ({ config: configToProtoObject(core.model(str(r.name), str(r.version)).config ?? {}) }), true],
      ModelStatistics: ['ModelStatisticsRequest', 'ModelStatisticsResponse', (r) => statisticsReport(core.statistics(str(r.name), str(r.version)))],
      RepositoryIndex: ['RepositoryIndexRequest', 'RepositoryIndexResponse', (r) => ({ models: core.index().filter((e) => r.ready !== true || e.state === 'READY') })],
      ModelInfer: ['ModelInferRequest', 'ModelInferResponse', (r, signal) => this.infer(r, signal)],
    };
    const definition: Record<string, ServiceDefinition[string]> = {};
    const implementation: UntypedServiceImplementation = {};
    for (const [method, [requestType, responseType, handler, viaFromObject]] of Object.entries(handlers)) {
      const requestCodec = codec(requestType);
      const responseCodec = codec(responseType, viaFromObject === true);
      definition[method] = {
        path: `/inference.GRPCInferenceService/${method}`,
        requestStream: false,
        responseStream: false,
        requestSerialize: (value: Message) => requestCodec.encode(value),
        requestDeserialize: (bytes: Buffer) => requestCodec.decode(bytes),
        responseSerialize: (value: Message) => responseCodec.encode(value),
        responseDeserialize: (bytes: Buffer) => responseCodec.decode(bytes),
        originalName: method,
      };
      implementation[method] = (call: ServerUnaryCall<Message, Message>, callback: sendUnaryData<Message>) => {
        // grpc-js cancels the call when the client does and when its deadline passes.
        const client = new AbortController();
        call.once('cancelled', () => client.abort());
        void this.answer(method, call.request, (r) => handler(r, client.signal), callback);
      };
    }
    this.server.addService(definition, implementation);
  }

  private async infer(request: Message, signal: AbortSignal): Promise<Message> {
    const result = await this.core.infer({ ...fromModelInferRequest(request), signal });
    return {
      model_name: result.modelName,
      model_version: result.modelVersion,
      id: result.id,
      outputs: result.outputs.map((o) => ({ name: o.name, datatype: o.datatype, shape: o.shape })),
      raw_output_contents: result.outputs.map((o) => o.data),
    };
  }

  private async answer(method: string, request: Message, handler: (request: Message) => Message | Promise<Message>, callback: sendUnaryData<Message>): Promise<void> {
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
      this.server.bindAsync(`${host.includes(':') ? `[${host}]` : host}:${port}`, ServerCredentials.createInsecure(), (error, bound) => {
        if (error !== null) reject(error);
        else resolve(bound);
      });
    });
  }

  /** Stops accepting calls and waits for running ones. */
  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.tryShutdown(() => resolve());
    });
  }
}

