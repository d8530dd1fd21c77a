/** Where a bar is drawn: the CLI's io has both (a presenter does not depend on the CLI above it). */
export interface ProgressTarget {
  readonly stderr: (text: string) => void;
  readonly stderrIsTTY: boolean;
}

/** Files above this size get a progress bar when verified on a terminal. */
export const PROGRESS_THRESHOLD = 256 * 1024 * 1024;

export interface Progress {
  update(done: number, total: number): void;
  /** Draws 100% and ends the line. */
  finish(): void;
  /** Ends the line where the bar stopped (on failure), so an error message starts on its own line. */
  stop(): void;
}

const NONE: Progress = { update: () => undefined, finish: () => undefined, stop: () => undefined };

/**
 * A one-line progress bar on stderr, only on a terminal and only for work
 * above the threshold; redrawn at most ten times a second. Piped output
 * never sees it.
 */
export function progressBar(io: ProgressTarget, label: string, total: number, threshold = PROGRESS_THRESHOLD): Progress {
  if (!io.stderrIsTTY || total < threshold) return NONE;
  let last = 0;
  let drawn = false;
  const draw = (done: number): void => {
    drawn = true;
    const width = 30;
    const fraction = total === 0 ? 1 : Math.min(1, done / total);
    const filled = Math.round(fraction * width);
    io.stderr(`\r${label} [${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${(fraction * 100).toFixed(0).padStart(3)}%`);
  };
  return {
    update(done) {
      const now = Date.now();
      if (now - last < 100) return;
      last = now;
      draw(done);
    },
    finish() {
      draw(total);
      io.stderr('\n');
    },
    stop() {
      if (drawn) io.stderr('\n');
      drawn = false;
    },
  };
}
