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

/** A commander parser for a boolean option spelt as tritonserver spells them (true/false, 1/0, on/off, yes/no). */
export function parseBoolOption(value: string): boolean {
  const v = value.toLowerCase();
  if (['true', '1', 'on', 'yes'].includes(v)) return true;
  if (['false', '0', 'off', 'no'].includes(v)) return false;
  throw new InvalidArgumentError(`expected true or false, got "${value}"`);
}

/** A --triton-version value: YY.MM or latest, else a usage error (exit 2) through the one funnel. */
export function checkTritonVersion(value: string, option = '--triton-version'): string {
  if (value === 'latest' || /^\d{2}\.\d{2}$/.test(value)) return value;
  throw new PopefError(ErrorCode.Usage, `${option} "${value}" is not YY.MM (for example 21.05) or latest`, {
    suggestion: 'give a Triton release as two two-digit numbers, such as 21.05 or 24.10, or latest',
  });
}

/** A number of seconds given as `option`, in milliseconds: a usage error (exit 2) unless positive and finite. */
export function positiveSecondsMs(value: string, option: string): number {
  const seconds = Number(value);
  if (!Number.isFinite(seconds) || seconds <= 0)
    throw new PopefError(ErrorCode.Usage, `${option} "${value}" is not a positive number of seconds`, {
      suggestion: 'give a number of seconds greater than 0, such as 30 or 0.5',
    });
  return seconds * 1000;
}

/**
 * The output-format option every command with more than one output shares:
 * --format FORMAT, with --json (and --markdown where there is one) kept as
 * aliases. Returns the format chosen; two that disagree are a usage error.
 */
export function chosenFormat<F extends string>(
  flags: { readonly format?: F; readonly json?: boolean; readonly markdown?: boolean },
  fallback: F,
): F | 'json' | 'markdown' {
  const asked = [flags.format, flags.json === true ? 'json' : undefined, flags.markdown === true ? 'markdown' : undefined].filter(
    (f): f is F => f !== undefined,
  );
  const distinct = [...new Set(asked)];
  if (distinct.length > 1)
    throw new PopefError(ErrorCode.Usage, `${distinct.map((f) => `--format ${f}`).join(' and ')} were both asked for`, {
      suggestion: 'give one --format',
    });
  return distinct[0] ?? fallback;
}

/**
 * An old spelling of an option, kept working: a one-line notice on standard
 * error says what to write instead.
 */
export function deprecated(stderr: (text: string) => void, old: string, replacement: string, why = 'the spelling every command uses'): void {
  stderr(`popef: warning: ${old} is deprecated; use ${replacement} (${why})\n`);
}

/** The exit codes paragraph of a command's --help. */
export function exitCodesHelp(lines: string): string {
  return `\nExit codes: ${lines}`;
}

/** A usage error (exit 2): what is wrong with the command line, and how to put it right. */
export function usage(message: string, suggestion?: string): PopefError {
  return new PopefError(ErrorCode.InvalidInput, message, { suggestion });
}

/** --plugin-option KEY=VALUE, repeated, into the options a plugin gets (run and serve share it). */
export function pluginOptions(values: readonly string[] | undefined, into: Record<string, string> = {}): Record<string, string> {
  for (const o of values ?? []) {
    const at = o.indexOf('=');
    if (at <= 0) throw usage(`--plugin-option "${o}" is not KEY=VALUE`);
    into[o.slice(0, at)] = o.slice(at + 1);
  }
  return into;
}
