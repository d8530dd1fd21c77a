import { isUtf8 } from '../io/platform.js';
import { ErrorCode, PopefError } from '../errors.js';
import { Limits } from './limits.js';

/**
 * A structural FlatBuffers verifier for the tables of schemas/popef.fbs.
 *
 * The flatbuffers TypeScript runtime reads out-of-range bytes as zeros, so
 * a damaged buffer would decode as plausible garbage. Following the
 * FlatBuffers maintainers' advice (verify once, then read unchecked), every
 * metadata and descriptor buffer passes through `verifyBuffer` before a
 * generated accessor touches it. The layout tables below mirror the .fbs;
 * test/schema/schema-drift.test.ts fails if they disagree.
 */

export type FieldKind =
  | { readonly kind: 'scalar'; readonly width: 1 | 4 | 8 }
  | { readonly kind: 'string' }
  | { readonly kind: 'vector'; readonly width: 4 | 8 }
  | { readonly kind: 'table'; readonly table: TableName }
  | { readonly kind: 'tables'; readonly table: TableName };

export type TableName = 'TensorInfo' | 'Anchor' | 'ProgramFlow' | 'ProgramName' | 'Option' | 'Metadata' | 'BlobDescriptor';

export interface FieldLayout {
  readonly name: string;
  /** The .fbs type as written, for the drift test. */
  readonly fbsType: string;
  readonly type: FieldKind;
}

const u8 = { kind: 'scalar', width: 1 } as const;
const u32 = { kind: 'scalar', width: 4 } as const;
const u64 = { kind: 'scalar', width: 8 } as const;
const str = { kind: 'string' } as const;
const table = (t: TableName): FieldKind => ({ kind: 'table', table: t });
const tables = (t: TableName): FieldKind => ({ kind: 'tables', table: t });

/** Fields of each table, in declaration (vtable slot) order. */
export const TABLE_LAYOUTS: Readonly<Record<TableName, readonly FieldLayout[]>> = {
  TensorInfo: [
    { name: 'data_type', fbsType: 'DataType', type: u8 },
    { name: 'shape', fbsType: '[long]', type: { kind: 'vector', width: 8 } },
  ],
  Anchor: [
    { name: 'name', fbsType: 'string', type: str },
    { name: 'handle', fbsType: 'string', type: str },
    { name: 'tensor_info', fbsType: 'TensorInfo', type: table('TensorInfo') },
    { name: 'is_per_replica', fbsType: 'bool', type: u8 },
    { name: 'type', fbsType: 'TensorType', type: u8 },
    { name: 'programs', fbsType: '[uint]', type: { kind: 'vector', width: 4 } },
  ],
  ProgramFlow: [
    { name: 'load', fbsType: '[uint]', type: { kind: 'vector', width: 4 } },
    { name: 'main', fbsType: '[uint]', type: { kind: 'vector', width: 4 } },
    { name: 'save', fbsType: '[uint]', type: { kind: 'vector', width: 4 } },
  ],
  ProgramName: [
    { name: 'index', fbsType: 'uint', type: u32 },
    { name: 'name', fbsType: 'string', type: str },
  ],
  Option: [
    { name: 'name', fbsType: 'string', type: str },
    { name: 'value', fbsType: 'string', type: str },
  ],
  Metadata: [
    { name: 'executable', fbsType: 'string', type: str },
    { name: 'anchors', fbsType: '[Anchor]', type: tables('Anchor') },
    { name: 'program_flow', fbsType: 'ProgramFlow', type: table('ProgramFlow') },
    { name: 'programs_map', fbsType: '[ProgramName]', type: tables('ProgramName') },
    { name: 'replication_factor', fbsType: 'long', type: u64 },
    { name: 'num_ipus', fbsType: 'long', type: u64 },
    { name: 'ipu_version', fbsType: 'long', type: u64 },
    { name: 'is_pod', fbsType: 'bool', type: u8 },
    { name: 'num_processes', fbsType: 'long', type: u64 },
    { name: 'is_inference', fbsType: 'bool', type: u8 },
    { name: 'device_iterations', fbsType: 'long', type: u64 },
    { name: 'seed_handle', fbsType: 'string', type: str },
    { name: 'engine_options', fbsType: '[Option]', type: tables('Option') },
    { name: 'device_options', fbsType: '[Option]', type: tables('Option') },
  ],
  BlobDescriptor: [
    { name: 'name', fbsType: 'string', type: str },
    { name: 'executable', fbsType: 'string', type: str },
    { name: 'tensor_info', fbsType: 'TensorInfo', type: table('TensorInfo') },
    { name: 'sample_count', fbsType: 'ulong', type: u64 },
    { name: 'uncompressed_size', fbsType: 'ulong', type: u64 },
  ],
};

interface Context {
  readonly bytes: Uint8Array;
  readonly view: DataView;
  readonly file: string;
  /** Absolute file offset of bytes[0], so errors point into the file. */
  readonly base: number;
  readonly what: string;
  tablesVisited: number;
}

function fail(ctx: Context, at: number, path: string, message: string): never {
  throw new PopefError(ErrorCode.BadFlatBuffer, `${ctx.what} is not a valid FlatBuffer: ${message}`, {
    file: ctx.file,
    offset: ctx.base + at,
    field: path,
    suggestion: 'the file is damaged: export or pack it again',
  });
}

function inBounds(ctx: Context, at: number, length: number): boolean {
  return at >= 0 && length >= 0 && at + length <= ctx.bytes.byteLength;
}

function readU32(ctx: Context, at: number, path: string): number {
  if (!inBounds(ctx, at, 4)) fail(ctx, at, path, 'offset out of bounds');
  if (at % 4 !== 0) fail(ctx, at, path, `offset at ${at} is not aligned to 4 bytes`);
  return ctx.view.getUint32(at, true);
}

/** Follows the uoffset stored at `at`; returns the absolute target position. */
function follow(ctx: Context, at: number, path: string): number {
  const target = at + readU32(ctx, at, path);
  if (!inBounds(ctx, target, 4)) fail(ctx, at, path, `offset points to ${target}, outside the buffer`);
  // Tables, strings and vectors all begin with a 4-byte field: FlatBuffers builders align them so.
  if (target % 4 !== 0) fail(ctx, at, path, `offset points to ${target}, which is not aligned to 4 bytes`);
  return target;
}

function verifyString(ctx: Context, at: number, path: string): void {
  const start = follow(ctx, at, path);
  const length = ctx.view.getUint32(start, true);
  if (length > Limits.maxStringBytes) fail(ctx, start, path, `string of ${length} bytes exceeds the limit of ${Limits.maxStringBytes}`);
  if (!inBounds(ctx, start + 4, length + 1)) fail(ctx, start, path, `string of ${length} bytes runs past the buffer`);
  if (ctx.bytes[start + 4 + length] !== 0) fail(ctx, start, path, 'string is not NUL-terminated');
  if (!isUtf8(ctx.bytes.subarray(start + 4, start + 4 + length))) fail(ctx, start, path, 'string is not valid UTF-8');
}

function verifyVector(ctx: Context, at: number, width: number, path: string): { start: number; length: number } {
  const start = follow(ctx, at, path);
  const length = ctx.view.getUint32(start, true);
  if (!inBounds(ctx, start + 4, length * width)) fail(ctx, start, path, `vector of ${length} elements runs past the buffer`);
  if ((start + 4) % width !== 0) fail(ctx, start, path, `vector elements at ${start + 4} are not aligned to ${width} bytes`);
  return { start: start + 4, length };
}

function verifyTable(ctx: Context, tablePos: number, name: TableName, path: string, depth: number): void {
  if (depth > Limits.maxTableDepth) fail(ctx, tablePos, path, 'tables nested too deeply');
  ctx.tablesVisited += 1;
  // Shared sub-tables could make a small buffer expensive to walk; no honest
  // buffer references more tables than it has 4-byte words.
  if (ctx.tablesVisited > ctx.bytes.byteLength / 4 + 1) fail(ctx, tablePos, path, 'too many table references');
  if (!inBounds(ctx, tablePos, 4)) fail(ctx, tablePos, path, 'table out of bounds');
  if (tablePos % 4 !== 0) fail(ctx, tablePos, path, `table at ${tablePos} is not aligned to 4 bytes`);
  const vtable = tablePos - ctx.view.getInt32(tablePos, true);
  if (!inBounds(ctx, vtable, 4) || vtable % 2 !== 0) fail(ctx, tablePos, path, 'vtable out of bounds');
  const vtableSize = ctx.view.getUint16(vtable, true);
  const tableSize = ctx.view.getUint16(vtable + 2, true);
  if (vtableSize < 4 || vtableSize % 2 !== 0 || !inBounds(ctx, vtable, vtableSize)) {
    fail(ctx, vtable, path, `bad vtable size ${vtableSize}`);
  }
  if (tableSize < 4 || !inBounds(ctx, tablePos, tableSize)) fail(ctx, vtable, path, `bad table size ${tableSize}`);
  const fields = TABLE_LAYOUTS[name];
  // Slots beyond the fields we know belong to a newer minor version: ignored.
  const slots = Math.min(fields.length, (vtableSize - 4) / 2);
  for (let i = 0; i < slots; i++) {
    const field = fields[i];
    if (field === undefined) break;
    const fieldOffset = ctx.view.getUint16(vtable + 4 + 2 * i, true);
    if (fieldOffset === 0) continue;
    const fieldPath = `${path}.${field.name}`;
    const type = field.type;
    const width = type.kind === 'scalar' ? type.width : 4;
    if (fieldOffset < 4 || fieldOffset + width > tableSize) fail(ctx, tablePos, fieldPath, 'field lies outside its table');
    const at = tablePos + fieldOffset;
    switch (type.kind) {
      case 'scalar':
        if (at % type.width !== 0) fail(ctx, at, fieldPath, `${type.width}-byte field at ${at} is not aligned to ${type.width} bytes`);
        break;
      case 'string':
        verifyString(ctx, at, fieldPath);
        break;
      case 'vector':
        verifyVector(ctx, at, type.width, fieldPath);
        break;
      case 'table':
        verifyTable(ctx, follow(ctx, at, fieldPath), type.table, fieldPath, depth + 1);
        break;
      case 'tables': {
        const { start, length } = verifyVector(ctx, at, 4, fieldPath);
        for (let k = 0; k < length; k++) {
          const slot = start + 4 * k;
          verifyTable(ctx, follow(ctx, slot, `${fieldPath}[${k}]`), type.table, `${fieldPath}[${k}]`, depth + 1);
        }
        break;
      }
    }
  }
}

/**
 * Verifies a finished FlatBuffer whose root is `root` and whose file
 * identifier must be `identifier`. Throws E_BAD_FLATBUFFER naming the file,
 * the absolute offset and the field path of the first problem.
 */
export function verifyBuffer(bytes: Uint8Array, root: TableName, identifier: string, where: { file: string; base: number; what: string }): void {
  const ctx: Context = {
    bytes,
    view: new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength),
    file: where.file,
    base: where.base,
    what: where.what,
    tablesVisited: 0,
  };
  if (bytes.byteLength < 8) fail(ctx, 0, root, `buffer of ${bytes.byteLength} bytes is too short`);
  const id = String.fromCharCode(bytes[4] ?? 0, bytes[5] ?? 0, bytes[6] ?? 0, bytes[7] ?? 0);
  if (id !== identifier) fail(ctx, 4, root, `file identifier is ${JSON.stringify(id)}, expected ${JSON.stringify(identifier)}`);
  verifyTable(ctx, follow(ctx, 0, root), root, root, 0);
}
