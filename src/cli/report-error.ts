import { ErrorCode, isPopefError, type PopefError } from '../errors.js';
import { printable } from '../present/printable.js';
import type { CliIo } from './io.js';

/**
 * The library's hints speak of its own options (`force: true`); where the
 * CLI has a flag for the way out, its hint names the flag instead. An error
 * says which option its hint names (PopefError.suggestedOption); every
 * command that writes takes -f, --force. A command that rewrote a hint for
 * the CLI (scaffold: what differs, and how to fix it) made an error that
 * names no option, and its hint is kept.
 */
const CLI_OPTION_HINTS: Readonly<Record<NonNullable<PopefError['suggestedOption']>, string>> = {
  force: 'use --force to replace it, or choose another name',
};

/** Hints for errors that come with none, by code. */
const CLI_HINTS: Readonly<Partial<Record<ErrorCode, string>>> = {
  [ErrorCode.Exists]: CLI_OPTION_HINTS.force,
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
  const hint = error.suggestedOption !== undefined ? CLI_OPTION_HINTS[error.suggestedOption] : (error.suggestion ?? CLI_HINTS[error.code]);
  if (hint !== undefined) io.stderr(`  hint: ${printable(hint)}\n`);
}
