// validate's deferral of V8's optimizing compiler (src/cli/optimizer-deferral.ts),
// with the flag setter recorded; the launcher's test checks that the code
// cache a validate run writes is still taken by the next run.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { DEFER_UP_TO_MODELS, deferOptimizingCompiler, plannedThreads, type DeferralContext } from '../../src/cli/optimizer-deferral.js';
import { bundleLoaded, newTurbofanHandoff, turbofanOffFromWorker } from '../../src/cli/turbofan-handoff.js';
import { LARGE_REPOSITORY_MODELS } from '../../src/triton/repository/pool-size.js';

function recorded(context: DeferralContext = {}): { flags: string[]; deferral: ReturnType<typeof deferOptimizingCompiler> } {
  const flags: string[] = [];
  const deferral = deferOptimizingCompiler({ execArgv: [], nodeOptions: '', cores: 2, ...context, setFlags: (f) => flags.push(f) });
  return { flags, deferral };
}

describe('deferring the optimizing compiler for small validate runs', () => {
  it('keeps TurboFan off for a small repository, checks a mid-sized one on both cores, and restores the flag at the end, once', () => {
    const { flags, deferral } = recorded();
    assert.deepEqual(flags, ['--no-turbofan']);
    assert.equal(deferral.threadsFor(1), 1, 'one model: no worker');
    assert.deepEqual(flags, ['--no-turbofan'], 'one thread on two cores: scavenges keep their helper');
    assert.equal(deferral.threadsFor(DEFER_UP_TO_MODELS), 2, 'the second core is free while TurboFan is off');
    assert.deepEqual(flags, ['--no-turbofan', '--no-parallel-scavenge'], 'two threads on two cores: each scavenges alone');
    deferral.end();
    deferral.end();
    assert.deepEqual(flags, ['--no-turbofan', '--no-parallel-scavenge', '--parallel-scavenge', '--turbofan']);
  });

  it('leaves turning TurboFan off to a booting early worker, and takes that back before turning it on', () => {
    const small = recorded({ turbofanHandoff: newTurbofanHandoff() });
    assert.deepEqual(small.flags, [], 'the worker sets it once booted');
    assert.equal(small.deferral.threadsFor(DEFER_UP_TO_MODELS), 2);
    assert.deepEqual(small.flags, ['--no-parallel-scavenge']);
    small.deferral.end();
    assert.deepEqual(
      small.flags,
      ['--no-parallel-scavenge', '--parallel-scavenge', '--turbofan'],
      'V8 default again, whether or not the worker had set it',
    );

    // The worker set it: the main thread turns it back on for a large repository, and no worker turns it off after that.
    const handoff = newTurbofanHandoff();
    bundleLoaded(handoff);
    const workerFlags: string[] = [];
    assert.equal(
      turbofanOffFromWorker(handoff, (f) => workerFlags.push(f)),
      true,
    );
    const large = recorded({ turbofanHandoff: handoff });
    large.deferral.threadsFor(DEFER_UP_TO_MODELS + 1);
    assert.deepEqual(large.flags, ['--turbofan']);
    assert.equal(
      turbofanOffFromWorker(handoff, (f) => workerFlags.push(f)),
      false,
      'taken back',
    );
    assert.deepEqual(workerFlags, ['--no-turbofan']);
  });

  it('turns parallel scavenging off only while the threads take every core, repository by repository', () => {
    const { flags, deferral } = recorded();
    deferral.threadsFor(DEFER_UP_TO_MODELS);
    deferral.threadsFor(DEFER_UP_TO_MODELS);
    assert.deepEqual(flags, ['--no-turbofan', '--no-parallel-scavenge'], 'set once');
    assert.equal(deferral.threadsFor(1), 1);
    assert.deepEqual(flags, ['--no-turbofan', '--no-parallel-scavenge', '--parallel-scavenge'], 'a one-thread repository gets it back');
    deferral.end();
    assert.deepEqual(flags, ['--no-turbofan', '--no-parallel-scavenge', '--parallel-scavenge', '--turbofan']);
  });

  it('turns TurboFan back on for a large repository before its models are checked, with the default threads', () => {
    const { flags, deferral } = recorded();
    assert.equal(deferral.threadsFor(DEFER_UP_TO_MODELS + 1), 1, 'on 2 cores, TurboFan takes the second');
    assert.deepEqual(flags, ['--no-turbofan', '--turbofan']);
    assert.equal(deferral.threadsFor(500), 1, 'and it stays on for the next repository');
    assert.equal(deferral.threadsFor(LARGE_REPOSITORY_MODELS), 2, 'a repository this large is checked on both cores all the same');
    assert.deepEqual(flags, ['--no-turbofan', '--turbofan', '--no-parallel-scavenge']);
    deferral.end();
    assert.deepEqual(flags, ['--no-turbofan', '--turbofan', '--no-parallel-scavenge', '--parallel-scavenge']);
    assert.equal(recorded({ cores: 8 }).deferral.threadsFor(DEFER_UP_TO_MODELS + 1), 8);
  });

  it('plans the threads the deferral will give, which the early workers are started on', () => {
    for (const models of [1, DEFER_UP_TO_MODELS, DEFER_UP_TO_MODELS + 1, LARGE_REPOSITORY_MODELS - 1, LARGE_REPOSITORY_MODELS]) {
      assert.equal(plannedThreads(models, 2, false), recorded().deferral.threadsFor(models), `${models} models`);
    }
    assert.equal(plannedThreads(LARGE_REPOSITORY_MODELS, 2, false), 2);
    assert.equal(plannedThreads(LARGE_REPOSITORY_MODELS - 1, 2, false), 1);
  });

  it("leaves V8's flags alone when the user chose how code is compiled", () => {
    for (const context of [
      { execArgv: ['--jitless'] },
      { execArgv: ['--no-opt'] },
      { nodeOptions: '--max-old-space-size=100 --turbofan' },
      { nodeOptions: '--maglev' },
      // V8 takes underscores for dashes, and "no" without its dash.
      { execArgv: ['--no_turbofan'] },
      { execArgv: ['--noturbofan'] },
      { execArgv: ['--noopt'] },
      { execArgv: ['--always_sparkplug'] },
    ]) {
      const { flags, deferral } = recorded(context);
      assert.equal(deferral.threadsFor(1000), 1, JSON.stringify(context));
      deferral.end();
      assert.deepEqual(flags, [], JSON.stringify(context));
    }
    // How collections are threaded is another choice: a compiler flag leaves it to this.
    const { flags, deferral } = recorded({ execArgv: ['--jitless'] });
    assert.equal(deferral.threadsFor(LARGE_REPOSITORY_MODELS), 2);
    deferral.end();
    assert.deepEqual(flags, ['--no-parallel-scavenge', '--parallel-scavenge']);
  });

  it("leaves scavenging alone when Node was started with a choice of how V8's collections are threaded", () => {
    // Node refuses these in NODE_OPTIONS, so only its command line can hold them.
    for (const option of [
      '--single-threaded-gc',
      '--single_threaded',
      '--parallel-scavenge',
      '--noparallel_scavenge',
      '--no-parallel-scavenge',
      '--predictable',
    ]) {
      const { flags, deferral } = recorded({ execArgv: [option] });
      assert.equal(deferral.threadsFor(DEFER_UP_TO_MODELS), 2, option);
      deferral.end();
      assert.deepEqual(flags, ['--no-turbofan', '--turbofan'], option);
    }
    // A flag whose name only begins like one of them is not that choice.
    const { flags, deferral } = recorded({ execArgv: ['--predictable-gc-schedule'] });
    deferral.threadsFor(DEFER_UP_TO_MODELS);
    assert.deepEqual(flags, ['--no-turbofan', '--no-parallel-scavenge']);
  });

  it('keeps parallel scavenges for one thread, even on one core, and changes nothing after end()', () => {
    const one = recorded({ cores: 1 });
    assert.equal(one.deferral.threadsFor(DEFER_UP_TO_MODELS), 1);
    assert.deepEqual(one.flags, ['--no-turbofan']);
    const { flags, deferral } = recorded();
    deferral.threadsFor(DEFER_UP_TO_MODELS);
    deferral.end();
    deferral.threadsFor(DEFER_UP_TO_MODELS);
    assert.deepEqual(flags, ['--no-turbofan', '--no-parallel-scavenge', '--parallel-scavenge', '--turbofan']);
  });

  it('switches scavenging once for a large repository after a small one', () => {
    const { flags, deferral } = recorded();
    deferral.threadsFor(DEFER_UP_TO_MODELS);
    deferral.threadsFor(LARGE_REPOSITORY_MODELS);
    assert.deepEqual(flags, ['--no-turbofan', '--no-parallel-scavenge', '--turbofan'], 'both take every core: scavenges stay single-threaded');
  });

  it("sets only flags this Node's V8 has (setFlagsFromString ignores a name it does not know, without a word)", () => {
    const { flags, deferral } = recorded();
    deferral.threadsFor(DEFER_UP_TO_MODELS);
    deferral.threadsFor(DEFER_UP_TO_MODELS + 1);
    deferral.threadsFor(LARGE_REPOSITORY_MODELS);
    deferral.end();
    const known = new Set(
      execFileSync(process.execPath, ['--v8-options'], { encoding: 'utf8' })
        .split('\n')
        .map((line) => /^\s+--([\w-]+)/.exec(line)?.[1])
        .filter((name): name is string => name !== undefined),
    );
    const names = new Set(flags.map((f) => f.replace(/^--(?:no-)?/, '')));
    assert.deepEqual([...names].sort(), ['parallel-scavenge', 'turbofan']);
    for (const name of names) assert.ok(known.has(name), `node --v8-options has no --${name}`);
  });
});
