import { constants } from 'node:os';
import { PluginError, type PopefError } from '../errors.js';

/**
 * The exit-code contract, in one place (documented in the README and --help):
 * 0 success; 1 findings (validate, diff, compare); 2 usage, input, format or
 * I/O errors; 3 an internal error (a bug: please report it); 128+n when a
 * plugin child dies by signal n.
 */
export const ExitCode = {
  Ok: 0,
  Findings: 1,
  Error: 2,
  Internal: 3,
} as const;

export const EXIT_CODES_HELP = `
Exit codes:
  0  success
  1  findings (differences, validation errors, comparison mismatches)
  2  usage, input, format or I/O error
  3  internal error (a bug in popef-toolkit: please report it)`;

/** The exit code of a library error: 2, or 128 + n for a plugin child that died by signal n (as a shell reports it). */
export function exitCodeOf(error: PopefError): number {
  if (error instanceof PluginError && error.signal !== undefined) {
    const n = (constants.signals as Record<string, number | undefined>)[error.signal];
    if (n !== undefined) return 128 + n;
  }
  return ExitCode.Error;
}
