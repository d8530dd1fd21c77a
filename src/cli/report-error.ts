import { ErrorCode, isPopefError } from '../errors.js';
import { printable } from '../present/printable.js';
import type { CliIo } from './io.js';

/**
 * The library's hints speak of its own options (`force: true`); where the
 * CLI has a flag for the way out, its hint names the flag instead, chosen by
 * the error's code. Every command that writes takes -f, --force. A hint that
 * does not speak of `force: true` is kept: a command that rewrote it for the
 * CLI said more than the table can (scaffold: what differs, and how to fix it).
 */
const CLI_HINTS: Readonly<Partial<Record<ErrorCode, string>>> = {
  [ErrorCode.Exists]: 'use --force to replace it, or choose another name',
};

/**
 * Prints a library error as one line (file, offset, field, what) plus a hint
 * line. Anything that is not a PopefError is rethrown: it is a bug, and the
 * funnel in main.ts reports it as one.
 */
export function reportError(error: unknown, io: CliIo): void {
  if (!isPopefError(error)) throw error;
  // A message may quote a name from the file: its control characters are shown, not obeyed.
  io.stderr(`popef: error: ${printable(error.describe())} [${error.code}]\n`);
  const libraryHint = error.suggestion === undefined || error.suggestion.includes('force: true');
  const hint = (libraryHint ? CLI_HINTS[error.code] : undefined) ?? error.suggestion;
  if (hint !== undefined) io.stderr(`  hint: ${printable(hint)}\n`);
}
