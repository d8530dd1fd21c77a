import { InvalidArgumentError } from 'commander';

/** A commander parser for an integer option within [min, max]. */
export function parseIntOption(min: number, max: number): (value: string) => number {
  return (value) => {
    if (!/^-?\d+$/.test(value)) throw new InvalidArgumentError(`expected an integer, got "${value}"`);
    const n = Number(value);
    if (n < min || n > max) throw new InvalidArgumentError(`expected an integer from ${min} to ${max}, got ${n}`);
    return n;
  };
}
