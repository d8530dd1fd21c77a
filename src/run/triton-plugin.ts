import { Client, credentials, status, type ServiceError } from '@grpc/grpc-js';
import { ErrorCode, PopefError } from '../errors.js';
import { ModelSet } from '../format/model-set.js';
import { protocolCodec, toInt, type ProtocolMessage } from '../triton/inference-protocol.js';
import { protocolFromPopef } from '../triton/protocol-datatypes.js';
import type { Availability, ExecutionPlugin, ModelRequest, OpenedModel, Tensor, TensorSpec } from './plugin-api.js';
import { byteLength, userTensorSpecs } from './tensor.js';

/**
 * The `triton` execution plugin: sends the inputs to a running inference
 * server that speaks Triton's protocol (a Triton server with the Poplar
 * backend on an IPU host, or `popef serve`) and takes its outputs, so that
 * `popef run --compare-with cpu` checks a deployed model against its source
 * graph. gRPC (grpc://HOST:PORT) or HTTP with binary tensors
 * (http://HOST:PORT).
 *
 * Options: url (required), model (the served model's name), version,
 * name.<anchor>=<client name> (name_map.json, filled in by popef run).
 */

interface Endpoint {
  readonly kind: 'grpc' | 'http';
  readonly address: string;
  readonly display: string;
}

function parseUrl(url: string | undefined): Endpoint {
  const m = url === undefined ? null : /^(grpc|http):\/\/([^/\s]+?)\/?$/.exec(url);
  if (m === null || url === undefined) {
    throw new PopefError(
      ErrorCode.InvalidInput,
      url === undefined ? 'plugin "triton" needs the server\'s address' : `--url "${url}" is not grpc://HOST:PORT or http://HOST:PORT`,
      {
        suggestion: 'give --url grpc://HOST:8001 or --url http://HOST:8000',
      },
    );
  }
  return { kind: m[1] === 'grpc' ? 'grpc' : 'http', address: m[2] ?? '', display: url };
}

/** The inputs' tensors in the model's input order. */
function inOrder(inputs: readonly TensorSpec[], values: ReadonlyMap<string, Tensor>): Tensor[] {
  return inputs.map((spec) => {
    const t = values.get(spec.name);
    if (t === undefined) throw new PopefError(ErrorCode.InvalidInput, `input "${spec.name}" is missing`, {});
    return t;
  });
}

/**
 * The JSON part of an answer may take this much beyond the outputs' own
 * bytes (names, shapes, parameters): a response is refused past the sum,
 * before it is buffered, whatever sizes it declares.
 */
export const RESPONSE_HEADER_LIMIT = 16 * 1024 * 1024;

/** The most an answer carrying `outputs` may be: their bytes and the header allowance. */
function responseLimit(outputs: readonly TensorSpec[]): number {
  return outputs.reduce((n, spec) => n + byteLength(spec), RESPONSE_HEADER_LIMIT);
}

/** The body of `res`, read as it arrives; refused once past `limit` (by Content-Length first). */
async function readBounded(endpoint: Endpoint, res: Response, limit: number): Promise<Buffer> {
  const declared = Number(res.headers.get('content-length') ?? Number.NaN);
  const tooLarge = (n: number): PopefError =>
    serverError(
      endpoint,
      `a response of ${n} bytes or more, more than the ${limit} this model's outputs can take (their bytes and ${RESPONSE_HEADER_LIMIT} for the JSON header)`,
    );
  if (declared > limit) {
    await res.body?.cancel().catch(() => undefined);
    throw tooLarge(declared);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  const reader = res.body?.getReader();
  if (reader === undefined) return Buffer.alloc(0);
  try {
    for (;;) {
      const step = (await reader.read()) as { done: boolean; value?: Uint8Array };
      const chunk = step.value;
      if (step.done || chunk === undefined) break;
      size += chunk.byteLength;
      if (size > limit) throw tooLarge(size);
      chunks.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return Buffer.concat(chunks, size);
}

function serverError(endpoint: Endpoint, message: string): PopefError {
  return new PopefError(ErrorCode.Plugin, `the server at ${endpoint.display} answered: ${message}`, {});
}

function unreachable(endpoint: Endpoint, message: string): PopefError {
  return new PopefError(ErrorCode.PluginUnavailable, `no inference server answers at ${endpoint.display}: ${message}`, {
    suggestion: 'start it (tritonserver, or popef serve REPOSITORY) and check --url',
  });
}

/** One unary gRPC call with the protocol's codecs. */
function grpcCall(
  client: Client,
  method: string,
  request: ProtocolMessage,
  requestType: string,
  responseType: string,
  timeoutMs: number,
): Promise<ProtocolMessage> {
  const req = protocolCodec(requestType);
  const res = protocolCodec(responseType);
  return new Promise((resolve, reject) => {
    client.makeUnaryRequest(
      `/inference.GRPCInferenceService/${method}`,
      (v: ProtocolMessage) => req.encode(v),
      (b: Buffer) => res.decode(b),
      request,
      { deadline: Date.now() + timeoutMs },
      (error: ServiceError | null, value?: ProtocolMessage) => {
        if (error !== null) reject(error);
        else resolve(value ?? {});
      },
    );
  });
}

/** The served model a run talks to, and how the model's anchors are named on the server. */
interface ServedModel {
  readonly endpoint: Endpoint;
  readonly model: string;
  /** '' for the server's choice of version. */
  readonly version: string;
  readonly inputs: readonly TensorSpec[];
  readonly outputs: readonly TensorSpec[];
  /** The server's name for an anchor. */
  readonly client: (anchor: string) => string;
}

export class TritonPlugin implements ExecutionPlugin {
  readonly name = 'triton';
  private readonly clients: Client[] = [];

  constructor(private readonly options: { readonly url?: string; readonly timeoutMs?: number } = {}) {}

  private get timeoutMs(): number {
    return this.options.timeoutMs ?? 300_000;
  }

  async probe(): Promise<Availability> {
    let endpoint: Endpoint;
    try {
      endpoint = parseUrl(this.options.url);
    } catch (error) {
      return { available: false, reason: (error as Error).message, hint: 'give --url grpc://HOST:8001 or --url http://HOST:8000' };
    }
    try {
      const ready =
        endpoint.kind === 'http'
          ? (await fetch(`http://${endpoint.address}/v2/health/ready`, { signal: AbortSignal.timeout(10_000) })).status === 200
          : await this.grpcReady(endpoint);
      return ready
        ? { available: true }
        : { available: false, reason: `the server at ${endpoint.display} is not ready`, hint: 'wait until it has loaded its models' };
    } catch (error) {
      return {
        available: false,
        reason: `no inference server answers at ${endpoint.display}: ${(error as Error).message}`,
        hint: 'start it (tritonserver, or popef serve REPOSITORY) and check --url',
      };
    }
  }

  private async grpcReady(endpoint: Endpoint): Promise<boolean> {
    const client = new Client(endpoint.address, credentials.createInsecure());
    try {
      const r = await grpcCall(client, 'ServerReady', {}, 'ServerReadyRequest', 'ServerReadyResponse', 10_000);
      return r.ready === true;
    } finally {
      client.close();
    }
  }

  async open(request: ModelRequest): Promise<OpenedModel> {
    const endpoint = parseUrl(request.options.url ?? this.options.url);
    const set = await ModelSet.open(request.files);
    let inputs: TensorSpec[];
    let outputs: TensorSpec[];
    try {
      const model = set.model(request.executable);
      if (model.metadata === undefined) throw new PopefError(ErrorCode.InvalidInput, `executable "${model.name}" has no metadata`, {});
      ({ inputs, outputs } = userTensorSpecs(model.metadata, set.storedTensorNames));
    } finally {
      await set.close();
    }
    const modelName = request.options.model;
    if (modelName === undefined || modelName === '') {
      throw new PopefError(ErrorCode.InvalidInput, 'plugin "triton" needs the name of the served model', {
        suggestion: 'run a Triton model directory (its name is the model name), or give --plugin-option model=NAME',
      });
    }
    const version = request.options.version ?? '';
    const client = (anchor: string): string => request.options[`name.${anchor}`] ?? anchor;
    for (const spec of [...inputs, ...outputs]) {
      if (protocolFromPopef(spec.dtype) === undefined)
        throw new PopefError(ErrorCode.InvalidInput, `tensor "${spec.name}" of dtype ${spec.dtype} has no datatype in Triton's protocol`, {});
    }
    const served: ServedModel = { endpoint, model: modelName, version, inputs, outputs, client };
    const run = endpoint.kind === 'http' ? this.httpRun(served) : this.grpcRun(served);
    return { inputs, outputs, run, close: () => Promise.resolve() };
  }

  /** Checks a returned tensor against the anchor: datatype, shape and byte count must all be the anchor's. */
  private toTensor(endpoint: Endpoint, spec: TensorSpec, name: string, datatype: string, shape: readonly number[], data: Uint8Array): Tensor {
    const expected = protocolFromPopef(spec.dtype) ?? '';
    const sameShape = shape.length === spec.shape.length && shape.every((d, i) => d === spec.shape[i]);
    if (datatype !== expected || !sameShape || data.byteLength !== byteLength(spec)) {
      throw serverError(
        endpoint,
        `output '${name}' is ${datatype} [${shape.join(', ')}] in ${data.byteLength} bytes, but the model's anchor "${spec.name}" is ${expected} [${spec.shape.join(', ')}] in ${byteLength(spec)} bytes`,
      );
    }
    return { ...spec, data };
  }

  private httpRun({ endpoint, model, version, inputs, outputs, client }: ServedModel): OpenedModel['run'] {
    const path = `/v2/models/${encodeURIComponent(model)}${version === '' ? '' : `/versions/${version}`}/infer`;
    const byName = new Map(outputs.map((spec) => [client(spec.name), spec]));
    return async (values) => {
      const tensors = inOrder(inputs, values);
      const header = Buffer.from(
        JSON.stringify({
          inputs: inputs.map((spec, i) => ({
            name: client(spec.name),
            datatype: protocolFromPopef(spec.dtype),
            shape: spec.shape,
            parameters: { binary_data_size: tensors[i]?.data.byteLength ?? 0 },
          })),
          outputs: outputs.map((spec) => ({ name: client(spec.name), parameters: { binary_data: true } })),
        }),
      );
      let res: Response;
      try {
        res = await fetch(`http://${endpoint.address}${path}`, {
          method: 'POST',
          headers: { 'Inference-Header-Content-Length': String(header.byteLength), 'Content-Type': 'application/octet-stream' },
          body: Buffer.concat([header, ...tensors.map((t) => t.data)]),
          signal: AbortSignal.timeout(this.timeoutMs),
        });
      } catch (error) {
        throw unreachable(endpoint, (error as Error).message);
      }
      const body = await readBounded(endpoint, res, responseLimit(outputs));
      const jsonLength = Number(res.headers.get('inference-header-content-length') ?? body.byteLength);
      if (!Number.isSafeInteger(jsonLength) || jsonLength < 0 || jsonLength > body.byteLength) {
        throw serverError(
          endpoint,
          `Inference-Header-Content-Length ${JSON.stringify(res.headers.get('inference-header-content-length')?.slice(0, 40))} does not fit a body of ${body.byteLength} bytes`,
        );
      }
      let json: { error?: string; outputs?: { name: string; datatype: string; shape: number[]; parameters?: { binary_data_size?: number } }[] };
      try {
        json = JSON.parse(body.subarray(0, jsonLength).toString('utf8')) as typeof json;
      } catch {
        throw serverError(endpoint, `HTTP ${res.status} with a body that is not Triton's JSON`);
      }
      if (res.status !== 200) throw serverError(endpoint, `HTTP ${res.status}: ${json.error ?? 'no message'}`);
      const out = new Map<string, Tensor>();
      let at = jsonLength;
      for (const o of json.outputs ?? []) {
        const size = o.parameters?.binary_data_size;
        const spec = byName.get(o.name);
        if (size === undefined) throw serverError(endpoint, `output '${o.name}' came without binary data`);
        if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0 || at + size > body.byteLength) {
          throw serverError(
            endpoint,
            `output '${o.name}' declares binary_data_size ${JSON.stringify(size)}, but ${body.byteLength - at} bytes of binary data are left`,
          );
        }
        const data = new Uint8Array(body.subarray(at, at + size));
        at += size;
        if (spec !== undefined) out.set(spec.name, this.toTensor(endpoint, spec, o.name, o.datatype, o.shape, data));
      }
      for (const spec of outputs) if (!out.has(spec.name)) throw serverError(endpoint, `no output '${client(spec.name)}' in the answer`);
      return out;
    };
  }

  private grpcRun({ endpoint, model, version, inputs, outputs, client }: ServedModel): OpenedModel['run'] {
    // Answers past the outputs' bytes and the header allowance are refused by grpc-js before they are buffered.
    const channel = new Client(endpoint.address, credentials.createInsecure(), {
      'grpc.max_receive_message_length': Math.min(responseLimit(outputs), 2 ** 31 - 1),
      'grpc.max_send_message_length': -1,
    });
    this.clients.push(channel);
    const byName = new Map(outputs.map((spec) => [client(spec.name), spec]));
    return async (values) => {
      const tensors = inOrder(inputs, values);
      let response: ProtocolMessage;
      try {
        response = await grpcCall(
          channel,
          'ModelInfer',
          {
            model_name: model,
            model_version: version,
            inputs: inputs.map((spec) => ({ name: client(spec.name), datatype: protocolFromPopef(spec.dtype), shape: spec.shape })),
            outputs: outputs.map((spec) => ({ name: client(spec.name) })),
            raw_input_contents: tensors.map((t) => t.data),
          },
          'ModelInferRequest',
          'ModelInferResponse',
          this.timeoutMs,
        );
      } catch (error) {
        const e = error as ServiceError;
        if (e.code === status.UNAVAILABLE && !/is not at ready state|unavailable/i.test(e.details)) throw unreachable(endpoint, e.details);
        throw serverError(endpoint, e.details);
      }
      const raw = (response.raw_output_contents ?? []) as Uint8Array[];
      const out = new Map<string, Tensor>();
      ((response.outputs ?? []) as ProtocolMessage[]).forEach((o, i) => {
        const name = String(o.name);
        const spec = byName.get(name);
        const shape = ((o.shape ?? []) as unknown[]).map(toInt);
        const data = raw[i];
        if (spec === undefined) return;
        if (data === undefined) throw serverError(endpoint, `output '${name}' came without raw_output_contents`);
        out.set(spec.name, this.toTensor(endpoint, spec, name, String(o.datatype), shape, new Uint8Array(data)));
      });
      for (const spec of outputs) if (!out.has(spec.name)) throw serverError(endpoint, `no output '${client(spec.name)}' in the answer`);
      return out;
    };
  }

  dispose(): Promise<void> {
    for (const c of this.clients.splice(0)) c.close();
    return Promise.resolve();
  }
}
