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
  if (total < threshold) return NONE;
  return progressLine(
    io,
    (done) => {
      const width = 30;
      const fraction = total === 0 ? 1 : Math.min(1, done / total);
      const filled = Math.round(fraction * width);
      return `${label} [${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${(fraction * 100).toFixed(0).padStart(3)}%`;
    },
    total,
  );
}

/**
 * Any one-line progress display (`render` gives the line for the work done
 * of the total): only on a terminal, redrawn at most ten times a second.
 */
export function progressLine(io: ProgressTarget, render: (done: number, total: number) => string, total = 0): Progress {
  if (!io.stderrIsTTY) return NONE;
  let last = 0;
  let drawn = false;
  let latestTotal = total;
  const draw = (done: number, total: number): void => {
    drawn = true;
    io.stderr(`\r${render(done, total)}`);
  };
  return {
    update(done, of) {
      latestTotal = of;
      const now = Date.now();
      if (now - last < 100) return;
      last = now;
      draw(done, of);
    },
    finish() {
      draw(latestTotal, latestTotal);
      io.stderr('\n');
    },
    stop() {
      if (drawn) io.stderr('\n');
      drawn = false;
    },
  };
}
