import { InvalidArgumentError } from 'commander';
import { ErrorCode, PopefError } from '../../errors.js';

/** A commander parser for an integer option within [min, max]. */
export function parseIntOption(min: number, max: number): (value: string) => number {
  return (value) => {
    if (!/^-?\d+$/.test(value)) throw new InvalidArgumentError(`expected an integer, got "${value}"`);
    const n = Number(value);
    if (n < min || n > max) throw new InvalidArgumentError(`expected an integer from ${min} to ${max}, got ${n}`);
    return n;
  };
}

/** A number of seconds given as `option`, in milliseconds: a usage error (exit 2) unless positive and finite. */
export function positiveSecondsMs(value: string, option: string): number {
  const seconds = Number(value);
  if (!Number.isFinite(seconds) || seconds <= 0) throw new PopefError(ErrorCode.InvalidInput, `${option} "${value}" is not a positive number of seconds`, {});
  return seconds * 1000;
}
