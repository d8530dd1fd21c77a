import { isPopefError } from '../errors.js';
import type { CliIo } from './io.js';

/**
 * Prints a library error as one line (file, offset, field, what) plus a hint
 * line. Anything that is not a PopefError is rethrown: it is a bug, and the
 * funnel in main.ts reports it as one.
 */
export function reportError(error: unknown, io: CliIo): void {
  if (!isPopefError(error)) throw error;
  io.stderr(`popef: error: ${error.describe()} [${error.code}]\n`);
  if (error.suggestion !== undefined) io.stderr(`  hint: ${error.suggestion}\n`);
}
