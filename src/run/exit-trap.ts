import { AsyncLocalStorage } from 'node:async_hooks';
import { ErrorCode, PopefError } from '../errors.js';

/**
 * An in-process plugin runs in popef's own process, where a process.exit(0)
 * in its open() would end `popef run` at once, with no output and status
 * 0: a false success. While a plugin's step runs, process.exit called from
 * the step's code (anything in its asynchronous context: its awaits, the
 * timers it sets) is refused: it fails the step with E_PLUGIN, and throws
 * to unwind the plugin's own code. popef's own calls are not in a step's
 * context and exit as ever.
 */

interface Step {
  readonly plugin: string;
  readonly what: string;
  readonly fail: (error: PopefError) => void;
}

const steps = new AsyncLocalStorage<Step>();
let installed = false;

function install(): void {
  if (installed) return;
  installed = true;
  /* eslint-disable no-restricted-globals -- the trap is on the process's own exit: a plugin that calls it must not end popef. */
  const exit = process.exit.bind(process);
  process.exit = (...args: Parameters<typeof process.exit>) => {
    const step = steps.getStore();
    // Passed on as given: process.exit() and process.exit(undefined) differ (the first keeps process.exitCode).
    if (step === undefined) return exit(...args);
    const code = args[0];
    const error = new PopefError(ErrorCode.Plugin, `plugin "${step.plugin}" called process.exit(${code ?? ''}) while it was asked to ${step.what}`, {
      suggestion: 'an in-process plugin reports a failure by throwing (or rejecting), never by ending the process',
    });
    step.fail(error);
    throw error;
  };
  /* eslint-enable no-restricted-globals */
}

/** Runs one step of plugin code with process.exit trapped: the result rejects if the step calls it. */
export function withExitTrapped<T>(plugin: string, what: string, start: () => T | Promise<T>): Promise<T> {
  install();
  let fail: (error: PopefError) => void = () => undefined;
  const trapped = new Promise<never>((_, reject) => (fail = reject));
  trapped.catch(() => undefined);
  const work = steps.run({ plugin, what, fail }, () => {
    try {
      // A plugin written in plain JavaScript may return a value, not a promise.
      return Promise.resolve(start());
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
  });
  return Promise.race([work, trapped]);
}
