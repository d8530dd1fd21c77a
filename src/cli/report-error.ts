import { isPopefError } from '../errors.js';
import { printable } from '../present/printable.js';
import type { CliIo } from './io.js';

/**
 * Prints a library error as one line (file, offset, field, what) plus a hint
 * line. Anything that is not a PopefError is rethrown: it is a bug, and the
 * funnel in main.ts reports it as one.
 */
export function reportError(error: unknown, io: CliIo): void {
  if (!isPopefError(error)) throw error;
  // A message may quote a name from the file: its control characters are shown, not obeyed.
  io.stderr(`popef: error: ${printable(error.describe())} [${error.code}]\n`);
  if (error.suggestion !== undefined) io.stderr(`  hint: ${printable(error.suggestion)}\n`);
}
