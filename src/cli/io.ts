import { jsonChunks } from '../present/json-chunks.js';
import type { EarlyWorkers } from './early-workers.js';

/** What a command may touch of the outside world: injected, so tests run in-process. */
export interface CliIo {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  readonly stdoutIsTTY: boolean;
  readonly stderrIsTTY: boolean;
  /** The terminal's width when standard output is one; undefined (no limit) for a pipe or file. */
  readonly stdoutColumns?: number;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly cwd: string;
  /** Aborted on Ctrl-C; long operations stop and clean up. */
  readonly signal: AbortSignal;
  /** Called by a command that ends normally on the signal (a server draining on Ctrl-C or SIGTERM), so the exit code stays its own. */
  readonly signalIsNormalStop?: () => void;
  /**
   * How long after Ctrl-C the command may take to stop (default 1 s: it
   * cleans up and returns; past that, popef exits). A server that drains
   * its requests asks for more.
   */
  readonly setStopGrace?: (ms: number) => void;
  /** Standard input, read whole, up to `limit` bytes (a file argument "-"). */
  readonly readStdin?: (limit: number) => Promise<Uint8Array>;
  /** validate's worker threads, started as the process started (early-workers.ts); validate's pool takes them first. */
  readonly earlyWorkers?: EarlyWorkers;
}

export function processIo(
  signal: AbortSignal,
  signalIsNormalStop?: () => void,
  setStopGrace?: (ms: number) => void,
  earlyWorkers?: EarlyWorkers,
): CliIo {
  return {
    ...(earlyWorkers === undefined ? {} : { earlyWorkers }),
    signalIsNormalStop,
    setStopGrace,
    readStdin: async (limit) => {
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of process.stdin as AsyncIterable<Buffer>) {
        size += chunk.byteLength;
        if (size > limit) {
          process.stdin.destroy();
          throw new Error(`standard input holds more than ${limit} bytes`);
        }
        chunks.push(chunk);
      }
      return Buffer.concat(chunks, size);
    },
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    stdoutIsTTY: process.stdout.isTTY,
    stderrIsTTY: process.stderr.isTTY,
    stdoutColumns: process.stdout.isTTY ? process.stdout.columns : undefined,
    env: process.env,
    cwd: process.cwd(),
    signal,
  };
}

/** Writes `value` as indented JSON and a newline, in pieces: a report of a million anchors never becomes one string. */
export function writeJson(io: CliIo, value: unknown): void {
  for (const chunk of jsonChunks(value)) io.stdout(chunk);
  io.stdout('\n');
}
