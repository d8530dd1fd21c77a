import { rmSync } from 'node:fs';
import { pendingTemporaries } from '../io/temp-registry.js';
import { main } from './main.js';
import { processIo } from './io.js';
import type { EarlyWorkers } from './early-workers.js';

/**
 * The process entry (bundled into dist/bin.cjs, which bin/popef.cjs loads
 * through dist/launch.cjs): turns Ctrl-C into a cooperative abort, so that
 * partial outputs are removed, and sets the exit code. A second Ctrl-C
 * exits at once.
 */
export async function runProcess(earlyWorkers?: EarlyWorkers): Promise<void> {
  // A reader that goes away (popef dump ... | head) ends the output, not with a stack trace.
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EPIPE') process.exit(typeof process.exitCode === 'number' ? process.exitCode : 0);
      throw error;
    });
  }
  const controller = new AbortController();
  let interrupted = false;
  const stop = { normal: false, graceMs: STOP_GRACE_MS };
  let signalExit = 130;
  const onSignal = (code: number) => (): void => {
    if (interrupted) process.exit(code);
    interrupted = true;
    signalExit = code;
    controller.abort();
    // The command cleans up and returns; one that cannot (a read the OS will not interrupt) is not waited for.
    setTimeout(() => process.exit(code), stop.graceMs).unref();
  };
  // An exit before a write cleaned up (the stop grace ran out) still removes its temporary files.
  process.once('exit', () => {
    for (const path of pendingTemporaries()) rmSync(path, { recursive: true, force: true });
  });
  process.on('SIGINT', onSignal(130));
  process.on('SIGTERM', onSignal(143));
  const io = processIo(
    controller.signal,
    () => (stop.normal = true),
    (ms) => (stop.graceMs = ms),
    earlyWorkers,
  );
  const code = await main(process.argv.slice(2), io);
  // Interrupted work exits 128 + n. A command that had already finished (its
  // output committed) when the signal came reports what it did: 0 means the
  // output is there and whole.
  process.exitCode = controller.signal.aborted && !stop.normal && code !== 0 ? signalExit : code;
  // The answer is given: whatever is still pending (a plugin promise that
  // never settles) must not keep popef alive. The exit is explicit, once the
  // output has left, rather than Node's own when the loop runs dry: that one
  // closes the signal handles before it tears down, which gives SIGINT back
  // its default action for the last milliseconds, so a Ctrl-C then would
  // kill a run whose output was already committed (seen: 4 runs of pack in
  // 120). process.exit keeps our handler installed to the end.
  setTimeout(() => process.exit(), LINGER_MS).unref();
  await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
  process.exit();
}

/** Resolves once what was written to `stream` before the call has been handed to the OS. */
function flushed(stream: NodeJS.WriteStream): Promise<void> {
  return new Promise((resolve) => {
    if (stream.destroyed || !stream.writable) resolve();
    else stream.write('', () => resolve());
  });
}

/** How long a command may take to stop after Ctrl-C or SIGTERM. */
const STOP_GRACE_MS = 1000;
/** How long output may take to drain once the command has returned. */
const LINGER_MS = 1000;
