import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CliIo } from '../../src/cli/io.js';
import { PROGRESS_THRESHOLD, progressBar } from '../../src/present/progress.js';

function io(tty: boolean): { io: CliIo; err: () => string } {
  let err = '';
  return {
    io: {
      stdout: () => undefined,
      stderr: (t) => {
        err += t;
      },
      stdoutIsTTY: tty,
      stderrIsTTY: tty,
      env: {},
      cwd: '/',
      signal: new AbortController().signal,
    },
    err: () => err,
  };
}

describe('progress bar', () => {
  it('draws on a terminal for work over the threshold, and ends the line', () => {
    const t = io(true);
    const bar = progressBar(t.io, 'importing', PROGRESS_THRESHOLD * 2);
    bar.update(PROGRESS_THRESHOLD, PROGRESS_THRESHOLD * 2);
    bar.finish();
    assert.equal(t.err(), `\rimporting [${'#'.repeat(15)}${'-'.repeat(15)}]  50%\rimporting [${'#'.repeat(30)}] 100%\n`);
  });

  it('ends its line when stopped part way, and only if it drew anything', () => {
    const t = io(true);
    const bar = progressBar(t.io, 'importing', PROGRESS_THRESHOLD * 4);
    bar.stop();
    assert.equal(t.err(), '');
    bar.update(PROGRESS_THRESHOLD, PROGRESS_THRESHOLD * 4);
    bar.stop();
    assert.equal(t.err(), `\rimporting [${'#'.repeat(8)}${'-'.repeat(22)}]  25%\n`);
  });

  it('stays silent when stderr is piped, or the work is small', () => {
    for (const [tty, total] of [
      [false, PROGRESS_THRESHOLD * 2],
      [true, PROGRESS_THRESHOLD - 1],
    ] as const) {
      const t = io(tty);
      const bar = progressBar(t.io, 'importing', total);
      bar.update(total / 2, total);
      bar.finish();
      assert.equal(t.err(), '');
    }
  });
});
