// A plugin's timeout (src/run/deadline.ts, on the WaitClock of
// src/run/protocol.ts) counts only the time the host waits for the plugin.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { raceDeadline } from '../../src/run/deadline.js';
import { WaitClock } from '../../src/run/protocol.js';

/** The host busy for `ms`, in slices that let timers run between them (as parsing a large reply frame by frame does). */
async function hostWork(ms: number): Promise<string> {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    const slice = performance.now() + 10;
    while (performance.now() < slice) {
      // busy
    }
    await new Promise((resolve) => setImmediate(resolve));
  }
  return 'done';
}

const timedOut = (): Error => new Error('timed out');
const aborted = (): Error => new Error('aborted');

describe('the plugin timeout', () => {
  it("does not count the host's own time against the plugin", async () => {
    const clock = new WaitClock();
    const work = (async () => {
      await clock.during(sleep(20));
      return hostWork(300);
    })();
    assert.equal(await raceDeadline(work, { timeoutMs: 100, spentMs: () => clock.waitedMs, onTimeout: timedOut, onAbort: aborted }), 'done');
    // The lower bound is loose on purpose: libuv measures a timer from the loop's cached time,
    // which can be several milliseconds old, so sleep(20) may end 15 ms after it was called.
    assert.ok(clock.waitedMs > 5 && clock.waitedMs < 100, `waited ${clock.waitedMs} ms`);
  });

  it('still ends a wait for the plugin that outlasts it, and counts overlapping waits once', async () => {
    const clock = new WaitClock();
    const started = performance.now();
    const work = Promise.all([clock.during(sleep(1000)), clock.during(sleep(1000))]);
    await assert.rejects(raceDeadline(work, { timeoutMs: 100, spentMs: () => clock.waitedMs, onTimeout: timedOut, onAbort: aborted }), /timed out/);
    const elapsed = performance.now() - started;
    assert.ok(elapsed < 500, `timed out after ${elapsed} ms`);
    assert.ok(clock.waitedMs < elapsed + 5, `two overlapping waits counted ${clock.waitedMs} ms in ${elapsed} ms`);
  });
});
