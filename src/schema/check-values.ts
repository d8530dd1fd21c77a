import { ErrorCode, PopefError } from '../errors.js';
import { Limits } from './limits.js';
import { TENSOR_TYPES, isDataType, type Metadata, type TensorInfo } from './model.js';

/**
 * What the writer checks of the values it is given before it encodes them
 * (encode.ts): every string, count, list and type within the limits the
 * reader applies (format/constants.ts), so that nothing written is refused
 * when read back. Each failure is E_INVALID_INPUT naming the field.
 */

export function invalid(message: string, field: string): never {
  throw new PopefError(ErrorCode.InvalidInput, message, { field });
}

export function checkName(field: string, value: unknown, allowEmpty: boolean): void {
  if (typeof value !== 'string') invalid(`${field} must be a string`, field);
  if (!allowEmpty && value === '') invalid(`${field} must not be empty`, field);
  if (Buffer.byteLength(value) > Limits.maxStringBytes) invalid(`${field} is longer than ${Limits.maxStringBytes} bytes`, field);
}

export function checkCount(field: string, value: unknown): void {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0)
    invalid(`${field} must be a non-negative integer, not ${String(value)}`, field);
}

export function checkU32List(field: string, values: readonly number[]): void {
  if (values.length > Limits.maxPrograms) invalid(`${field} has more than ${Limits.maxPrograms} entries`, field);
  values.forEach((v, i) => {
    if (!Number.isInteger(v) || v < 0 || v > 0xffffffff) invalid(`${field}[${i}] must be an unsigned 32-bit integer, not ${v}`, `${field}[${i}]`);
  });
}

export function checkTensorInfo(field: string, info: TensorInfo): void {
  if (!isDataType(info.dtype)) invalid(`${field}: unknown dtype ${JSON.stringify(info.dtype)}`, `${field}.dtype`);
  if (info.shape.length > Limits.maxRank) invalid(`${field}: rank ${info.shape.length} exceeds ${Limits.maxRank}`, `${field}.shape`);
  info.shape.forEach((d, i) => checkCount(`${field}.shape[${i}]`, d));
}

export function toLength(value: bigint, field: string): number {
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) invalid(`${field} ${value} is too large`, field);
  return Number(value);
}

export function checkMetadata(m: Metadata): void {
  checkName('metadata.executable', m.executable, false);
  if (m.anchors.length > Limits.maxAnchors) invalid(`more than ${Limits.maxAnchors} anchors`, 'metadata.anchors');
  m.anchors.forEach((a, i) => {
    const f = `metadata.anchors[${i}]`;
    checkName(`${f}.name`, a.name, false);
    checkName(`${f}.handle`, a.handle, true);
    checkTensorInfo(`${f}.tensorInfo`, a.tensorInfo);
    if (!(TENSOR_TYPES as readonly string[]).includes(a.type)) invalid(`${f}.type: unknown tensor type ${JSON.stringify(a.type)}`, `${f}.type`);
    checkU32List(`${f}.programs`, a.programs);
  });
  checkU32List('metadata.programFlow.load', m.programFlow.load);
  checkU32List('metadata.programFlow.main', m.programFlow.main);
  checkU32List('metadata.programFlow.save', m.programFlow.save);
  checkU32List(
    'metadata.programsMap',
    m.programsMap.map((p) => p.index),
  );
  m.programsMap.forEach((p, i) => checkName(`metadata.programsMap[${i}].name`, p.name, true));
  for (const key of ['replicationFactor', 'numIpus', 'ipuVersion', 'numProcesses', 'deviceIterations'] as const)
    checkCount(`metadata.${key}`, m[key]);
  checkName('metadata.seedHandle', m.seedHandle, true);
  for (const list of ['engineOptions', 'deviceOptions'] as const) {
    if (m[list].length > Limits.maxOptions) invalid(`metadata.${list} has more than ${Limits.maxOptions} entries`, `metadata.${list}`);
    m[list].forEach((o, i) => {
      checkName(`metadata.${list}[${i}].name`, o.name, true);
      checkName(`metadata.${list}[${i}].value`, o.value, true);
    });
  }
}
