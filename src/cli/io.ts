/** What a command may touch of the outside world: injected, so tests run in-process. */
export interface CliIo {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  readonly stdoutIsTTY: boolean;
  readonly stderrIsTTY: boolean;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly cwd: string;
  /** Aborted on Ctrl-C; long operations stop and clean up. */
  readonly signal: AbortSignal;
}

export function processIo(signal: AbortSignal): CliIo {
  return {
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    stdoutIsTTY: process.stdout.isTTY,
    stderrIsTTY: process.stderr.isTTY,
    env: process.env,
    cwd: process.cwd(),
    signal,
  };
}
