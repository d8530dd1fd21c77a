import { extname } from 'node:path';
import { inflateSync } from 'node:zlib';
import { createRequire } from 'node:module';
import type * as PngModule from 'pngjs';
import type { PNG } from 'pngjs';
import { ErrorCode, PopefError } from '../../errors.js';
import { FILE_LIMITS, readRegularFile } from '../../io/local-file.js';
import type { Tensor, TensorSpec } from '../plugin-api.js';
import { byteLength, checkAgainstSpec, elementCount, fromNumbers, isFloat } from '../tensor.js';
import { readNpy } from './npy.js';

/**
 * Model inputs from files: .npy, .json (nested arrays or {shape, data}),
 * raw .bin (little-endian, exact size), .png (grayscale or RGB, laid out as
 * the input needs; float inputs scaled to [0, 1] by default, as
 * torchvision's ToTensor does), or seeded random data. Every input comes
 * out checked against the spec the model expects.
 */

export interface ImageOptions {
  /** Multiplier applied to 0..255 pixels of float inputs (default 1/255). */
  readonly scale?: number;
  /** Per-channel mean subtracted after scaling (one value, or one per channel). */
  readonly mean?: readonly number[];
  /** Per-channel standard deviation divided by after the mean. */
  readonly std?: readonly number[];
}

/** How randomTensor draws its values. */
export interface RandomOptions {
  readonly seed: number;
  /** Inclusive range; default [0, 1) for floats, [0, 10] for integers, {0, 1} for BOOL. */
  readonly range?: readonly [number, number];
}

function inputError(label: string, file: string, message: string, suggestion?: string): PopefError {
  return new PopefError(ErrorCode.InvalidInput, `input "${label}": ${message}`, { file, suggestion });
}

/** mulberry32: small, fast, and the same numbers on every platform for a seed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A tensor of `spec` filled with seeded random values: the same seed gives the same tensor. */
export function randomTensor(spec: TensorSpec, options: RandomOptions): Tensor {
  const next = seededRandom(options.seed);
  const n = elementCount(spec.shape);
  const values = new Float64Array(n);
  if (isFloat(spec.dtype)) {
    const [lo, hi] = options.range ?? [0, 1];
    for (let i = 0; i < n; i++) values[i] = lo + next() * (hi - lo);
  } else {
    const [lo, hi] = options.range ?? (spec.dtype === 'BOOL' ? [0, 1] : [0, 10]);
    for (let i = 0; i < n; i++) values[i] = Math.floor(lo + next() * (Math.floor(hi) - Math.ceil(lo) + 1));
  }
  return fromNumbers(spec, values);
}

/**
 * Nested lists (or one {shape, data} object around them) to a shape and flat
 * values. The walk goes no deeper than the input's rank, so a hostile file
 * nested a million deep is an error, not a stack overflow.
 */
function flattenJson(value: unknown, rank: number, label: string, file: string): { shape: number[]; data: number[] } {
  if (typeof value === 'object' && value !== null && !Array.isArray(value) && 'data' in value) {
    const v = value as { shape?: unknown; data: unknown };
    if (typeof v.data === 'object' && v.data !== null && !Array.isArray(v.data))
      throw inputError(label, file, '"data" must be a list of numbers (nested lists, or flat)');
    const inner = flattenJson(v.data, rank, label, file);
    if (v.shape === undefined) return inner;
    if (!Array.isArray(v.shape) || !v.shape.every((d) => Number.isSafeInteger(d) && (d as number) >= 0)) {
      throw inputError(label, file, '"shape" must be a list of sizes');
    }
    const shape = v.shape as number[];
    if (elementCount(shape) !== inner.data.length)
      throw inputError(label, file, `"shape" [${shape.join(', ')}] holds ${elementCount(shape)} elements but "data" has ${inner.data.length}`);
    return { shape, data: inner.data };
  }
  const data: number[] = [];
  const shapeOf = (v: unknown, depth: number, shape: number[]): void => {
    if (Array.isArray(v)) {
      if (depth >= Math.max(rank, 1))
        throw inputError(
          label,
          file,
          `the lists are nested deeper than the input's ${rank} dimension(s)`,
          "write the values with the input's nesting, or as one flat list",
        );
      if (shape.length === depth) shape.push(v.length);
      else if (shape[depth] !== v.length) throw inputError(label, file, `the nested arrays are ragged at depth ${depth}`);
      for (const x of v) shapeOf(x, depth + 1, shape);
      return;
    }
    if (depth !== shape.length) throw inputError(label, file, `the nested arrays are ragged at depth ${depth}`);
    if (typeof v === 'number') data.push(v);
    else if (typeof v === 'boolean') data.push(v ? 1 : 0);
    else throw inputError(label, file, `${JSON.stringify(v).slice(0, 60)} is not a number`);
  };
  const shape: number[] = [];
  shapeOf(value, 0, shape);
  return { shape, data };
}

/**
 * The most bytes an input file of this kind may hold for `spec`, so that a
 * huge file is refused before it is read: raw files are exact, .npy adds
 * its header, JSON allows 64 characters an element, PNG its pixels uncompressed.
 */
function inputLimit(ext: string, spec: TensorSpec): number {
  const bytes = byteLength(spec);
  const elements = elementCount(spec.shape);
  const slack = 1024 * 1024;
  switch (ext) {
    case '.bin':
    case '.raw':
      return bytes;
    case '.npy':
      return bytes + slack;
    case '.json':
      return Math.min(FILE_LIMITS.input, elements * 64 + slack);
    case '.png':
      return Math.min(FILE_LIMITS.input, elements * 4 * 2 + slack);
    default:
      return FILE_LIMITS.input;
  }
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/**
 * pngjs decodes an image whose compressed data is cut short (it pads the
 * missing rows), and allocates whatever size the header claims. So before
 * it runs: the chunks must lie inside the file and end with IEND, the image
 * must fit in the input (so its size is bounded by the model, not the file),
 * and the IDAT stream must inflate completely, to no more than the rows need.
 */
function checkPngComplete(bytes: Buffer, capacity: number, label: string, file: string): void {
  const bad = (message: string): PopefError => inputError(label, file, `not a complete PNG: ${message}`, 'export the image again');
  if (bytes.length < 8 || !bytes.subarray(0, 8).equals(PNG_SIGNATURE)) throw bad('the PNG signature is missing');
  const idat: Buffer[] = [];
  let width = 0;
  let height = 0;
  let rowBytes = 0;
  let ended = false;
  for (let at = 8; at < bytes.length && !ended;) {
    if (at + 12 > bytes.length) throw bad(`the chunk at offset ${at} is cut short`);
    const length = bytes.readUInt32BE(at);
    const type = bytes.toString('latin1', at + 4, at + 8);
    if (at + 12 + length > bytes.length) throw bad(`chunk ${type} at offset ${at} claims ${length} bytes, past the end of the file`);
    const body = bytes.subarray(at + 8, at + 8 + length);
    if (type === 'IHDR' && length >= 13) {
      width = body.readUInt32BE(0);
      height = body.readUInt32BE(4);
      const depth = body[8] ?? 8;
      const channels = ({ 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 } as Record<number, number>)[body[9] ?? 0] ?? 4;
      rowBytes = 1 + Math.ceil((width * channels * depth) / 8);
      if (width * height > capacity)
        throw inputError(
          label,
          file,
          `the image is ${width}x${height}, larger than the whole input (${capacity} elements)`,
          "resize the image to the model's input size",
        );
    } else if (type === 'IDAT') {
      idat.push(body);
    } else if (type === 'IEND') {
      ended = true;
    }
    at += 12 + length;
  }
  if (!ended) throw bad('it has no IEND chunk (the file is cut short)');
  if (width === 0 || height === 0) throw bad('it has no usable IHDR chunk');
  // Adam7 interlacing adds at most one filter byte per row of each of its seven passes.
  const most = height * rowBytes + 7 * height;
  try {
    inflateSync(Buffer.concat(idat), { maxOutputLength: most });
  } catch (error) {
    throw bad(`its image data does not inflate completely (${(error as Error).message})`);
  }
}

/** Lays one image out as the input needs: [..., C, H, W], [..., H, W, C] (C = 1 or 3) or [..., H, W]. */
function pngTensor(bytes: Buffer, spec: TensorSpec, label: string, file: string, image: ImageOptions): Tensor {
  checkPngComplete(bytes, elementCount(spec.shape), label, file);
  let png: PNG;
  try {
    // pngjs is loaded by the first PNG input, not with every popef run.
    png = (createRequire(import.meta.url)('pngjs') as typeof PngModule).PNG.sync.read(bytes);
  } catch (error) {
    throw inputError(label, file, `not a readable PNG: ${(error as Error).message}`);
  }
  const { width, height, data } = png;
  const s = spec.shape;
  const r = s.length;
  let layout: 'chw' | 'hwc' | 'hw';
  let channels: number;
  if (r >= 3 && (s[r - 3] === 1 || s[r - 3] === 3) && s[r - 2] === height && s[r - 1] === width) {
    layout = 'chw';
    channels = s[r - 3] ?? 1;
  } else if (r >= 3 && (s[r - 1] === 1 || s[r - 1] === 3) && s[r - 3] === height && s[r - 2] === width) {
    layout = 'hwc';
    channels = s[r - 1] ?? 1;
  } else if (r >= 2 && s[r - 2] === height && s[r - 1] === width) {
    layout = 'hw';
    channels = 1;
  } else {
    throw inputError(
      label,
      file,
      `the image is ${width}x${height}, but the input is [${s.join(', ')}], which has no ${height}x${width} image plane`,
      "resize the image to the model's input size",
    );
  }
  const perImage = channels * height * width;
  const total = elementCount(s);
  const scale = isFloat(spec.dtype) ? (image.scale ?? 1 / 255) : 1;
  const mean = image.mean ?? [0];
  const std = image.std ?? [1];
  const values = new Float64Array(total);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const p = 4 * (y * width + x);
      const rgb = [data[p] ?? 0, data[p + 1] ?? 0, data[p + 2] ?? 0];
      // Grayscale as PIL's convert('L') computes it.
      const pixel = channels === 1 ? [(rgb[0] ?? 0) * 0.299 + (rgb[1] ?? 0) * 0.587 + (rgb[2] ?? 0) * 0.114] : rgb;
      for (let c = 0; c < channels; c++) {
        const raw = pixel[c] ?? 0;
        const v = isFloat(spec.dtype) ? (raw * scale - (mean[c] ?? mean[0] ?? 0)) / (std[c] ?? std[0] ?? 1) : raw;
        const index = layout === 'hwc' ? (y * width + x) * channels + c : c * height * width + y * width + x;
        values[index] = v;
      }
    }
  }
  // One image fills every leading (batch) position.
  for (let start = perImage; start < total; start += perImage) values.copyWithin(start, 0, perImage);
  return fromNumbers(spec, values);
}

/** Reads one input file and checks it against the spec; `label` is the name the user gave. */
export async function loadInput(spec: TensorSpec, path: string, label: string, image: ImageOptions = {}): Promise<Tensor> {
  const ext = extname(path).toLowerCase();
  const limit = inputLimit(ext, spec);
  let bytes: Buffer;
  try {
    bytes = await readRegularFile(path, { what: `input "${label}"`, limit });
  } catch (error) {
    if (error instanceof PopefError && error.code === ErrorCode.LimitExceeded) {
      throw inputError(
        label,
        path,
        `the file is larger than ${limit} bytes, more than a ${ext} file for ${spec.dtype} [${spec.shape.join(', ')}] can need`,
        'check that this is the input you meant',
      );
    }
    throw error;
  }
  let tensor: Tensor;
  switch (ext) {
    case '.npy':
      tensor = { ...readNpy(bytes, path), name: spec.name };
      break;
    case '.json': {
      let value: unknown;
      try {
        value = JSON.parse(bytes.toString('utf8'));
      } catch (error) {
        throw inputError(label, path, `not valid JSON: ${(error as Error).message}`);
      }
      const { shape, data } = flattenJson(value, spec.shape.length, label, path);
      // A flat list fills the expected shape; nested lists must match it.
      const useShape = shape.length === 1 && spec.shape.length !== 1 && data.length === elementCount(spec.shape) ? spec.shape : shape;
      if (useShape.length !== spec.shape.length || useShape.some((d, i) => d !== spec.shape[i])) {
        throw inputError(
          label,
          path,
          `holds shape [${useShape.join(', ')}], but the model expects [${spec.shape.join(', ')}]`,
          'write the values with the expected nesting, or as {"shape": [...], "data": [...]}',
        );
      }
      tensor = fromNumbers({ ...spec }, data);
      break;
    }
    case '.bin':
    case '.raw':
      if (bytes.length !== byteLength(spec)) {
        throw inputError(
          label,
          path,
          `holds ${bytes.length} bytes, but ${spec.dtype} [${spec.shape.join(', ')}] needs exactly ${byteLength(spec)}`,
          'raw files hold the little-endian elements and nothing else',
        );
      }
      tensor = { ...spec, data: new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length) };
      break;
    case '.png':
      tensor = pngTensor(bytes, spec, label, path, image);
      break;
    default:
      throw inputError(
        label,
        path,
        `the file type ${ext === '' ? '(no extension)' : ext} is not one popef run reads`,
        'use .npy, .json, .bin or .png',
      );
  }
  checkAgainstSpec(tensor, spec, label);
  return tensor;
}

export interface InputBinding {
  /** Inputs given as files, by the name the user knows: the client name, or the anchor name. */
  readonly files: readonly { readonly name: string; readonly path: string }[];
  /** Fill the inputs not given with seeded random data (input i gets seed + i). */
  readonly random?: RandomOptions;
  readonly image?: ImageOptions;
  /** The client-facing name of an anchor. */
  readonly nameOf: (anchor: string) => string;
}

/** The model's inputs, by anchor name, from files and (for the rest, when asked) random data; every one checked against its spec. */
export async function bindInputs(specs: readonly TensorSpec[], binding: InputBinding): Promise<Map<string, Tensor>> {
  const { nameOf } = binding;
  const describe = (s: TensorSpec): string => `${s.dtype} [${s.shape.join(', ')}]`;
  const byName = new Map<string, TensorSpec>();
  for (const spec of specs) {
    byName.set(spec.name, spec);
    byName.set(nameOf(spec.name), spec);
  }
  const inputs = new Map<string, Tensor>();
  for (const { name, path } of binding.files) {
    const spec = byName.get(name);
    if (spec === undefined)
      throw new PopefError(
        ErrorCode.InvalidInput,
        `the model has no input "${name}"; its inputs: ${specs.map((s) => `"${nameOf(s.name)}" ${describe(s)}`).join(', ')}`,
      );
    if (inputs.has(spec.name)) throw new PopefError(ErrorCode.InvalidInput, `input "${name}" is given twice`);
    inputs.set(spec.name, await loadInput(spec, path, name, binding.image));
  }
  specs.forEach((spec, i) => {
    if (inputs.has(spec.name)) return;
    const { random } = binding;
    if (random === undefined)
      throw new PopefError(ErrorCode.InvalidInput, `input "${nameOf(spec.name)}" (${describe(spec)}) is not given`, {
        suggestion: 'give it with --input NAME=FILE, or use --random',
      });
    inputs.set(spec.name, randomTensor(spec, { ...random, seed: random.seed + i }));
  });
  return inputs;
}
