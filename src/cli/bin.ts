import { main } from './main.js';
import { processIo } from './io.js';

/**
 * The process entry (bundled into dist/popef.mjs): turns Ctrl-C into a
 * cooperative abort, so that partial outputs are removed, and sets the exit
 * code. A second Ctrl-C exits at once.
 */
export async function runProcess(): Promise<void> {
  // A reader that goes away (popef dump ... | head) ends the output, not with a stack trace.
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EPIPE') process.exit(typeof process.exitCode === 'number' ? process.exitCode : 0);
      throw error;
    });
  }
  const controller = new AbortController();
  let interrupted = false;
  const stop = { normal: false };
  let signalExit = 130;
  const onSignal = (code: number) => (): void => {
    if (interrupted) process.exit(code);
    interrupted = true;
    signalExit = code;
    controller.abort();
  };
  process.on('SIGINT', onSignal(130));
  process.on('SIGTERM', onSignal(143));
  process.exitCode = await main(process.argv.slice(2), processIo(controller.signal, () => (stop.normal = true)));
  if (controller.signal.aborted && !stop.normal) process.exitCode = signalExit;
}
