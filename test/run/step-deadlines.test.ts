// The shared timer of a plugin's steps (src/run/step-deadlines.ts): every
// step still gets its own outcome or its own timeout error.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { StepDeadlines } from '../../src/run/step-deadlines.js';

const never = new Promise<never>(() => undefined);

describe('step deadlines', () => {
  it('gives each settled step its value or its error, as it is', async () => {
    const deadlines = new StepDeadlines(60_000);
    assert.equal(await deadlines.race(Promise.resolve(7), () => new Error('late')), 7);
    const thrown = 'not an Error';
    await assert.rejects(
      deadlines.race(Promise.reject(thrown as unknown as Error), () => new Error('late')),
      (e) => e === thrown,
    );
  });

  it('fails every step that outlasts the timeout with its own error, and not the ones that settled', async () => {
    const deadlines = new StepDeadlines(20);
    const slow = [1, 2, 3].map((i) => deadlines.race(never, () => new Error(`step ${i} is late`)));
    const quick = deadlines.race(Promise.resolve('on time'), () => new Error('quick is late'));
    assert.equal(await quick, 'on time');
    for (const [i, step] of slow.entries()) await assert.rejects(step, { message: `step ${i + 1} is late` });
    // The timer is armed again for steps that start after the first ones timed out.
    await assert.rejects(
      deadlines.race(never, () => new Error('a later step is late')),
      { message: 'a later step is late' },
    );
  });

  it("does not fail a step at an earlier step's deadline, when the timer was armed for that one", async () => {
    const deadlines = new StepDeadlines(1000);
    // The first step arms the timer for its deadline, then ends at once; the timer stays armed for it.
    assert.equal(await deadlines.race(Promise.resolve('first'), () => new Error('first is late')), 'first');
    await new Promise((r) => setTimeout(r, 600));
    let outcome = 'pending';
    const second = deadlines
      .race(never, () => new Error('second is late'))
      .catch((e: unknown) => (outcome = e instanceof Error ? e.message : String(e)));
    // Past the first step's deadline (1,000 ms), well before the second's (1,600 ms).
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(outcome, 'pending');
    await second;
    assert.equal(outcome, 'second is late');
  });
});
