import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import protobuf from 'protobufjs';
import { packageRoot } from '../package-root.js';

/**
 * The messages of Triton's gRPC inference protocol (package inference),
 * read from the shipped schemas/grpc_service.proto and
 * schemas/model_config.proto with protobufjs, field names kept as written.
 * Both ends use it: the server of `popef serve` and the client of the
 * `triton` execution plugin.
 */

export type ProtocolMessage = Record<string, unknown>;

export interface Codec {
  encode(value: ProtocolMessage): Buffer;
  decode(bytes: Buffer): ProtocolMessage;
}

let rootCache: protobuf.Root | undefined;

function root(): protobuf.Root {
  if (rootCache !== undefined) return rootCache;
  const r = new protobuf.Root();
  for (const file of ['model_config.proto', 'grpc_service.proto']) {
    protobuf.parse(readFileSync(join(packageRoot(), 'schemas', file), 'utf8'), r, { keepCase: true });
  }
  r.resolveAll();
  rootCache = r;
  return r;
}

/**
 * The codec of message `inference.<name>`. With `viaFromObject`, values are
 * converted first (enum names to numbers, maps from objects): needed for
 * ModelConfig, whose enums this project holds by name.
 */
export function protocolCodec(name: string, viaFromObject = false): Codec {
  const type = root().lookupType(`inference.${name}`);
  return {
    encode: (value) => {
      const bytes = type.encode(viaFromObject ? type.fromObject(value) : value).finish();
      // On Node, protobufjs writes into a Buffer already: a view of it, not a copy.
      return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    },
    decode: (bytes) => type.decode(bytes) as unknown as ProtocolMessage,
  };
}

/** A protobufjs 64-bit value (a Long, or a number when small) as a number. */
export function toInt(value: unknown): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'object' && value !== null && typeof (value as { toNumber?: unknown }).toNumber === 'function')
    return (value as { toNumber(): number }).toNumber();
  return Number(value);
}
