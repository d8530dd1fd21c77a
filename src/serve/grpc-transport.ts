import { protocolCodec as codec, toInt, type ProtocolMessage } from '../triton/inference-protocol.js';
import { isProtocolDataType, protocolElementBytes } from '../triton/protocol-datatypes.js';
import { serializeBytes, type InferRequest, type RequestInput, type RequestedOutput } from './infer-request.js';
import type { InferenceServer, InferResult, RequestLog, TransportOptions } from './inference-server.js';
import { SharedMemoryRegistry, type RegionSlice } from './shared-memory.js';
import { ResponseError, asRequestError, invalidArg, type StatusCode } from './status.js';
import { TransportBase } from './transport.js';
import { grpcRequestParameters } from './grpc-parameters.js';
import { unaryMethods } from './grpc-methods.js';
import { GrpcServer, type GrpcMethod, type StreamCall } from './grpc-server.js';
import { GrpcCode, GrpcStatusError } from './grpc-wire.js';
import type { Cancellation } from './cancellation.js';

/**
 * Triton's gRPC service, inference.GRPCInferenceService, on the server of
 * grpc-server.ts (node:http2) with protobufjs as the message codec
 * (schemas/grpc_service.proto, read at start); the unary methods are the
 * table of grpc-methods.ts. Requests become the transport-neutral calls of InferenceServer;
 * input data comes from raw_input_contents or typed contents with the
 * rules of Triton's gRPC frontend (server r24.10, grpc/infer_handler.cc),
 * outputs always go back as raw_output_contents, as Triton sends them.
 */

type Message = ProtocolMessage;

/** Triton's error classes as gRPC status codes (server r24.10, grpc_utils.cc). */
const GRPC_STATUS: Readonly<Record<StatusCode, GrpcCode>> = {
  UNKNOWN: GrpcCode.UNKNOWN,
  INTERNAL: GrpcCode.INTERNAL,
  NOT_FOUND: GrpcCode.NOT_FOUND,
  INVALID_ARG: GrpcCode.INVALID_ARGUMENT,
  UNAVAILABLE: GrpcCode.UNAVAILABLE,
  UNSUPPORTED: GrpcCode.UNIMPLEMENTED,
  ALREADY_EXISTS: GrpcCode.ALREADY_EXISTS,
  CANCELLED: GrpcCode.CANCELLED,
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
  const { priority, timeoutUs, sequence } = grpcRequestParameters((message.parameters ?? {}) as Record<string, Message>);
  const scheduling = {
    ...(priority === undefined ? {} : { priority }),
    ...(timeoutUs === undefined ? {} : { timeoutUs }),
    ...(sequence === undefined ? {} : { sequence }),
  };
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

export class GrpcTransport extends TransportBase {
  readonly name = 'gRPC';
  readonly portFlag = '--grpc-port';
  private readonly server: GrpcServer;

  constructor(core: InferenceServer, options: TransportOptions) {
    super(core, options);
    const methods = new Map<string, GrpcMethod>();
    const path = (method: string): string => `/inference.GRPCInferenceService/${method}`;
    for (const [method, spec] of Object.entries(unaryMethods(core, (r, signal) => this.infer(r, signal)))) {
      const request = codec(spec.request);
      const response = codec(spec.response, spec.viaFromObject === true);
      methods.set(path(method), {
        kind: 'unary',
        decode: (bytes) => request.decode(bytes),
        encode: (value) => response.encode(value),
        handle: (r, call) => this.answer(method, r, (m) => spec.handle(m, call.signal)),
      });
    }
    const request = codec('ModelInferRequest');
    const response = codec('ModelStreamInferResponse');
    methods.set(path('ModelStreamInfer'), {
      kind: 'bidi',
      decode: (bytes) => request.decode(bytes),
      encode: (value) => response.encode(value),
      open: (call) => this.stream(call),
    });
    this.server = new GrpcServer(methods, { maxMessageLength: options.maxRequestSize, budget: options.budget });
  }

  private async infer(request: Message, signal?: Cancellation): Promise<Message> {
    return toModelInferResponse(await this.core.infer({ ...fromModelInferRequest(request, this.core.sharedMemory), signal }));
  }

  /**
   * ModelStreamInfer for models that are not decoupled (stream_infer_handler.cc):
   * every request gets one answer on the stream, in the order the requests
   * came; an error is an answer too (error_message), and the stream stays
   * open. Answers carry triton_final_response, except those of requests
   * refused before they were issued, which carry only the request's id.
   * A stream the client cancels cancels the requests it still has running
   * (the call's signal).
   */
  private stream(call: StreamCall): { message(request: Message): Promise<void>; halfClose(): void } {
    let previous: Promise<void> = Promise.resolve();
    let ended = false;
    let pending = 0;
    const finishIfDone = (): void => {
      if (ended && pending === 0) call.end();
    };
    return {
      message: (request) => {
        const started = performance.now();
        const answer = this.streamAnswer(request, call.signal);
        pending += 1;
        previous = previous.then(async () => {
          const [message, entry] = await answer;
          call.write(message);
          this.options.log?.({ ...entry, ms: performance.now() - started });
          pending -= 1;
          finishIfDone();
        });
        // streamAnswer settles every request as an answer: nothing rejects here, and the chain must never break.
        previous = previous.catch(() => undefined);
        // Settled once this request's answer is written: the server counts it as waiting until then.
        return previous;
      },
      halfClose: () => {
        ended = true;
        finishIfDone();
      },
    };
  }

  private async streamAnswer(request: Message, signal: Cancellation): Promise<[Message, RequestLog]> {
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

  /** One unary call: the handler's answer, or its error as Triton's status; logged either way. */
  private async answer(method: string, request: Message, handler: (request: Message) => Message | Promise<Message>): Promise<Message> {
    const started = performance.now();
    const model = str(request.model_name) || str(request.name) || undefined;
    try {
      const response = await handler(request);
      this.options.log?.({ transport: 'grpc', method, model, status: 0, ms: performance.now() - started });
      return response;
    } catch (error) {
      const e = asRequestError(error);
      const code = GRPC_STATUS[e.status];
      this.options.log?.({ transport: 'grpc', method, model, status: code, ms: performance.now() - started, error: e.message });
      throw new GrpcStatusError(code, e.message);
    }
  }

  listen(port: number, host: string): Promise<number> {
    return this.server.listen(port, host);
  }

  /** Stops accepting calls and waits for running ones. */
  close(): Promise<void> {
    return this.server.close();
  }

  /** Ends every session left, a partial stream included (the running requests are done). */
  closeAll(): void {
    this.server.closeAll();
  }
}
