import { ErrorCode, PopefError } from '../errors.js';

/**
 * The one place that decides whether [offset, offset+length) lies inside a
 * source of `size` bytes. Every source calls it before touching bytes.
 */
export function checkRange(name: string, size: number, offset: number, length: number, field: string): void {
  if (!Number.isSafeInteger(offset) || !Number.isSafeInteger(length) || offset < 0 || length < 0) {
    throw new PopefError(ErrorCode.BadStructure, `invalid byte range (offset ${offset}, length ${length})`, {
      file: name,
      offset,
      field,
    });
  }
  if (offset + length > size) {
    throw new PopefError(ErrorCode.Truncated, `file ends at byte ${size}, but ${field} needs ${length} bytes from offset ${offset}`, {
      file: name,
      offset,
      field,
      suggestion: 'the file is truncated: copy or export it again',
    });
  }
}
