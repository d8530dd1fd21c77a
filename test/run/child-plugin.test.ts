// The child-process plugin host: the façade (src/run/child-plugin.ts) over
// the process (child/process.ts) and the request channel (child/channel.ts),
// against the echo plugin (test/run/echo-plugin).
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { PluginError } from '../../src/errors.js';
import { ChildProcessPlugin } from '../../src/run/child-plugin.js';
import { fromNumbers, toNumbers } from '../../src/run/tensor.js';
import { ROOT, fixture } from '../helpers.js';

const ECHO = join(ROOT, 'test/run/echo-plugin');
const MNIST = { files: [fixture('mnist/executable.popef')], executable: '5230962391836378370', options: {} };
const INPUT = fromNumbers(
  { name: 'input', dtype: 'F32', shape: [1, 1, 28, 28] },
  new Float64Array(784).map((_, i) => i),
);

function echo(env: Record<string, string> = {}): ChildProcessPlugin {
  return new ChildProcessPlugin({ name: 'echo', command: process.execPath, args: [ECHO], env: { ...process.env, ...env } });
}

describe('the child-process plugin', () => {
  it('closing an opened model closes only that model: the child goes on, and dispose() stops it', async () => {
    const plugin = echo();
    try {
      const first = await plugin.open(MNIST);
      await first.close();
      await assert.rejects(first.run(new Map([['input', INPUT]])), /run\(\) after close\(\)/);
      // The same child opens the model again and runs it.
      const second = await plugin.open(MNIST);
      const out = await second.run(new Map([['input', INPUT]]));
      assert.deepEqual(Array.from(toNumbers(out.get('input:echo') ?? INPUT)).slice(0, 3), [0, 1, 2]);
      await second.close();
    } finally {
      await plugin.dispose();
    }
    await assert.rejects(
      plugin.probe().then(() => plugin.open(MNIST)),
      (e: unknown) => e instanceof PluginError && e.failure === 'died',
    );
  });

  it('takes requests that overlap one at a time, in order, each answered by its own reply', async () => {
    const plugin = echo();
    try {
      const model = await plugin.open(MNIST);
      const inputs = [1, 2, 3, 4, 5].map((k) => fromNumbers({ name: 'input', dtype: 'F32', shape: [1, 1, 28, 28] }, new Float64Array(784).fill(k)));
      const outputs = await Promise.all(inputs.map((t) => model.run(new Map([['input', t]]))));
      assert.deepEqual(
        outputs.map((o) => toNumbers(o.get('input:echo') ?? INPUT)[0]),
        [1, 2, 3, 4, 5],
      );
    } finally {
      await plugin.dispose();
    }
  });

  it("gives the plugin's own error reply as failure 'reply', and a plugin out of step as 'protocol' (then stopped)", async () => {
    const plugin = echo();
    try {
      await plugin.probe();
      await assert.rejects(
        plugin.withExchange({ type: 'no-such-request' }, [], 5000, () => Promise.resolve()),
        (e: unknown) => e instanceof PluginError && e.failure === 'reply' && /unknown request no-such-request \(E_UNKNOWN\)/.test(e.message),
      );
      // Still in step after its error reply: the next request is answered.
      assert.equal((await plugin.open(MNIST)).inputs.length, 1);
    } finally {
      await plugin.dispose();
    }
    const garbage = echo({ ECHO_PLUGIN_MODE: 'garbage' });
    try {
      await assert.rejects(
        garbage.probe(),
        (e: unknown) => e instanceof PluginError && e.failure === 'protocol' && /broke the protocol: expected a JSON frame/.test(e.message),
      );
    } finally {
      await garbage.dispose();
    }
  });

  it("reports a child that died by a signal with the signal, for the CLI's 128 + n", async () => {
    const plugin = new ChildProcessPlugin({ name: 'segv', command: '/bin/sh', args: ['-c', 'kill -SEGV $$'] });
    try {
      await assert.rejects(plugin.probe(), (e: unknown) => e instanceof PluginError && e.failure === 'died' && e.signal === 'SIGSEGV');
    } finally {
      await plugin.dispose();
    }
  });
});
