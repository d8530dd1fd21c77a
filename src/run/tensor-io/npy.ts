import { ErrorCode, PopefError } from '../../errors.js';
import { DATA_TYPE_INFO, DATA_TYPES, type DataType } from '../../schema/data-types.js';
import type { Tensor } from '../plugin-api.js';
import { byteLength } from '../tensor.js';

/**
 * NumPy's .npy format (versions 1.0, 2.0 and 3.0): magic "\x93NUMPY", a
 * version, a little-endian header length, a Python-literal dict header
 * ({'descr', 'fortran_order', 'shape'}) padded to a multiple of 64, then the
 * raw array. Written as version 1.0 (or 2.0 when the header needs it).
 */

const MAGIC = Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]);

/** The .npy descr of each dtype NumPy has (DATA_TYPE_INFO's `npy`), and back. */
const FROM_DESCR = new Map<string, DataType>();
for (const dtype of DATA_TYPES) {
  const descr = DATA_TYPE_INFO[dtype].npy;
  if (descr === undefined) continue;
  FROM_DESCR.set(descr, dtype);
  // Single-byte types have no byte order; NumPy also writes them with '<' or '='.
  if (descr.startsWith('|')) {
    FROM_DESCR.set(`<${descr.slice(1)}`, dtype);
    FROM_DESCR.set(`=${descr.slice(1)}`, dtype);
  }
}
FROM_DESCR.set('<b1', 'BOOL');
FROM_DESCR.set('?', 'BOOL');

function bad(file: string, message: string, suggestion?: string): PopefError {
  return new PopefError(ErrorCode.InvalidInput, `not a usable .npy file: ${message}`, { file, suggestion });
}

/** numpy.lib.format's max_header_size: a longer header is refused unless the file is trusted (allow_pickle). */
const MAX_HEADER = 10_000;

/** At most 80 characters of a header, for an error message. */
function excerpt(header: string): string {
  const trimmed = header.trim();
  return JSON.stringify(trimmed.length > 80 ? `${trimmed.slice(0, 80)}...` : trimmed);
}

type HeaderValue = string | boolean | number | readonly (number | string | boolean)[];

/**
 * The header dict, read as the Python literal it is (NumPy evaluates it with
 * ast.literal_eval): quoted strings, True/False, integers and floats, tuples
 * of those. A key given twice keeps its last value, as a Python dict does.
 */
function parseHeader(header: string, file: string): Map<string, HeaderValue> {
  let at = 0;
  const fail = (): never => {
    throw bad(file, `the header is not a Python dict literal (at character ${at}): ${excerpt(header)}`);
  };
  const space = (): void => {
    while (at < header.length && /\s/.test(header[at] ?? '')) at++;
  };
  const scalar = (): string | boolean | number => {
    space();
    const quote = header[at];
    if (quote === "'" || quote === '"') {
      const end = header.indexOf(quote, at + 1);
      if (end < 0) fail();
      const text = header.slice(at + 1, end);
      at = end + 1;
      return text;
    }
    const m = /^(True|False|[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?))/.exec(header.slice(at, at + 64));
    if (m === null) return fail();
    const word = m[1] ?? '';
    at += word.length;
    if (word === 'True' || word === 'False') return word === 'True';
    // A float literal stays a float even when whole (1.0): NumPy's shape check wants ints.
    return /[.eE]/.test(word) ? Number.NaN : Number(word);
  };
  const value = (): HeaderValue => {
    space();
    if (header[at] !== '(') return scalar();
    at++;
    const items: (string | boolean | number)[] = [];
    for (;;) {
      space();
      if (header[at] === ')') break;
      items.push(scalar());
      space();
      if (header[at] === ',') at++;
      else if (header[at] !== ')') fail();
    }
    at++;
    return items;
  };
  const fields = new Map<string, HeaderValue>();
  space();
  if (header[at] !== '{') fail();
  at++;
  for (;;) {
    space();
    if (header[at] === '}') break;
    const key = scalar();
    if (typeof key !== 'string') fail();
    space();
    if (header[at] !== ':') fail();
    at++;
    fields.set(String(key), value());
    space();
    if (header[at] === ',') at++;
    else if (header[at] !== '}') fail();
  }
  at++;
  space();
  if (at !== header.length) fail();
  return fields;
}

/** Parses .npy bytes. `file` names the source in errors. */
export function readNpy(bytes: Uint8Array, file: string, name = ''): Tensor {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buf.length < 10 || !buf.subarray(0, 6).equals(MAGIC)) throw bad(file, 'the NumPy magic is missing');
  const major = buf[6] ?? 0;
  let headerLength: number;
  let offset: number;
  if (major === 1) {
    headerLength = buf.readUInt16LE(8);
    offset = 10;
  } else if (major === 2 || major === 3) {
    if (buf.length < 12) throw bad(file, 'truncated header');
    headerLength = buf.readUInt32LE(8);
    offset = 12;
  } else {
    throw bad(file, `format version ${major} is unknown`);
  }
  if (offset + headerLength > buf.length) throw bad(file, 'truncated header');
  if (headerLength > MAX_HEADER) {
    throw bad(
      file,
      `the header is ${headerLength} bytes, more than the ${MAX_HEADER} NumPy reads without allow_pickle`,
      'save the array with numpy.save (its header is a few dozen bytes)',
    );
  }
  const header = buf.toString(major === 3 ? 'utf8' : 'latin1', offset, offset + headerLength);
  const fields = parseHeader(header, file);
  const keys = [...fields.keys()].sort();
  if (keys.join() !== 'descr,fortran_order,shape') {
    throw bad(
      file,
      `the header has the keys ${keys.map((k) => JSON.stringify(k.slice(0, 40))).join(', ') || '(none)'}; NumPy wants exactly descr, fortran_order and shape`,
    );
  }
  const descr = fields.get('descr');
  const fortran = fields.get('fortran_order');
  const shape = fields.get('shape');
  if (typeof descr !== 'string' || typeof fortran !== 'boolean' || !Array.isArray(shape)) {
    throw bad(file, `the header lacks descr (a string), fortran_order (True or False) or shape (a tuple): ${excerpt(header)}`);
  }
  if (shape.some((d) => typeof d !== 'number' || !Number.isSafeInteger(d) || d < 0))
    throw bad(file, 'shape is not a tuple of sizes (non-negative integers)');
  const dtype = FROM_DESCR.get(descr);
  if (dtype === undefined) throw bad(file, `dtype ${descr} is not supported`, 'save the array as little-endian bool, int, uint or float');
  if (fortran) throw bad(file, 'the array is in Fortran (column-major) order', 'save it with numpy.ascontiguousarray first');
  const dataStart = offset + headerLength;
  const expected = byteLength({ dtype, shape });
  if (buf.length - dataStart !== expected)
    throw bad(file, `${buf.length - dataStart} data bytes for ${dtype} [${shape.join(', ')}], which needs ${expected}`);
  return { name, dtype, shape, data: new Uint8Array(buf.buffer, buf.byteOffset + dataStart, expected) };
}

/** Serializes a tensor as .npy bytes. */
export function writeNpy(t: Tensor): Uint8Array {
  const descr: string | undefined = DATA_TYPE_INFO[t.dtype].npy;
  if (descr === undefined) {
    throw new PopefError(ErrorCode.InvalidInput, `dtype ${t.dtype} has no NumPy equivalent`, { suggestion: 'save FP8 tensors as raw bytes' });
  }
  const shape = t.shape.length === 1 ? `(${t.shape[0] ?? 0},)` : `(${t.shape.join(', ')})`;
  let dict = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  const prefix = dict.length + 11 < 65536 ? 10 : 12;
  const total = Math.ceil((prefix + dict.length + 1) / 64) * 64;
  dict = dict.padEnd(total - prefix - 1, ' ') + '\n';
  const head = Buffer.alloc(prefix);
  MAGIC.copy(head, 0);
  head[6] = prefix === 10 ? 1 : 2;
  head[7] = 0;
  if (prefix === 10) head.writeUInt16LE(dict.length, 8);
  else head.writeUInt32LE(dict.length, 8);
  return Buffer.concat([head, Buffer.from(dict, 'latin1'), t.data]);
}
