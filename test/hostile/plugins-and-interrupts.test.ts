import assert from 'node:assert/strict';
import { chmod, copyFile, mkdir, readdir, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fixture, inTempDir } from '../helpers.js';
import { afterLoading, assertCleanError, processRunning, spawnPopef, until } from './spawn-popef.js';

/**
 * Plugins that misbehave, and interrupts at awkward moments: every command
 * stops within a second of Ctrl-C, no plugin descendant outlives popef, and
 * what a killed run left beside its destination is gone after the next run.
 */

const MNIST = fixture('mnist/executable.popef');

async function inProcessPlugin(dir: string, name: string, body: string): Promise<string> {
  const path = join(dir, `${name}.mjs`);
  await writeFile(path, `export default { name: '${name}', probe: async () => ({ available: true }), dispose: async () => {}, ${body} };\n`);
  return path;
}

/**
 * A plugin program (popef-plugin/1) whose answers are `handlers`, JavaScript
 * keyed by message type, each given `m` (the message) and `send(message,
 * tensors?)`, `header(tag, length)` and `out` (its stdout) to answer with.
 * It answers hello and open (with MNIST's anchors) unless told otherwise.
 */
async function childPlugin(dir: string, name: string, handlers: Record<string, string>): Promise<string> {
  const script = join(dir, `${name}.cjs`);
  const cases = Object.entries(handlers)
    .map(([type, body]) => `    case ${JSON.stringify(type)}: { ${body} break; }`)
    .join('\n');
  await writeFile(
    script,
    `const out = process.stdout;
const header = (tag, n) => { const h = Buffer.alloc(12); h.write(tag, 0, 'ascii'); h.writeBigUInt64LE(BigInt(n), 4); return h; };
const send = (message, tensors = []) => { const j = Buffer.from(JSON.stringify(message)); out.write(Buffer.concat([header('JSON', j.length), j, ...tensors.flatMap((t) => [header('TENS', t.length), t])])); };
const anchors = { inputs: [{ name: 'input', dtype: 'F32', shape: [1, 1, 28, 28] }], outputs: [{ name: 'softmax/Softmax:0', dtype: 'F32', shape: [1, 10] }] };
let buffered = Buffer.alloc(0);
process.stdin.on('data', (chunk) => {
  buffered = Buffer.concat([buffered, chunk]);
  while (buffered.length >= 12) {
    const n = Number(buffered.readBigUInt64LE(4));
    if (buffered.length < 12 + n) return;
    const tag = buffered.toString('ascii', 0, 4);
    const body = buffered.subarray(12, 12 + n);
    buffered = buffered.subarray(12 + n);
    if (tag === 'JSON') handle(JSON.parse(body.toString('utf8')));
  }
});
setInterval(() => {}, 1000);
function handle(m) {
  switch (m.type) {
${cases}
    case 'hello': send({ type: 'hello', id: m.id, protocol: 'popef-plugin/1', available: true }); break;
    case 'open': send({ type: 'opened', id: m.id, ...anchors }); break;
    case 'close': send({ type: 'closed', id: m.id }); process.exit(0);
  }
}
`,
  );
  const program = join(dir, name);
  await writeFile(program, `#!/bin/sh\nexec '${process.execPath}' '${script}'\n`);
  await chmod(program, 0o755);
  return program;
}

describe('plugins: the cases of issue 24', () => {
  it('a child plugin sending a JSON control frame over 2 GiB is a protocol error (exit 2), refused before it is buffered', async () => {
    await inTempDir(async (dir) => {
      const plugin = await childPlugin(dir, 'huge-json', { hello: 'out.write(header("JSON", 2.5 * 1024 ** 3)); return;' });
      const run = await spawnPopef(['run', MNIST, '--plugin', plugin, '--random']);
      assertCleanError(
        run,
        2,
        /plugin "[^"]*huge-json" broke the protocol: a control message \(JSON frame\) of 2684354560 bytes exceeds the limit of 67108864 \[E_PLUGIN\]/,
      );
      assert.ok(run.ms < 5000, `took ${run.ms} ms`);
    });
  });

  it('a child plugin announcing a 12 GiB tensor frame is a protocol error (exit 2), not a RangeError', async () => {
    await inTempDir(async (dir) => {
      const twelve = 12 * 1024 ** 3;
      // In an open reply (bounded by the whole-tensor limit) and in a run's result (bounded by the model's output).
      const opened = await childPlugin(dir, 'big-opened', {
        open: `send({ type: 'opened', id: m.id, ...anchors, tensors: [{ name: 'w', dtype: 'U8', shape: [${twelve}], bytes: ${twelve} }] }); out.write(header('TENS', ${twelve})); return;`,
      });
      assertCleanError(
        await spawnPopef(['run', MNIST, '--plugin', opened, '--random']),
        2,
        /broke the protocol: tensor "w", sent whole, of 12884901888 bytes exceeds the limit of 4294967296 \[E_PLUGIN\]/,
      );
      const result = await childPlugin(dir, 'big-result', {
        run: `send({ type: 'result', id: m.id, tensors: [{ name: 'softmax/Softmax:0', dtype: 'F32', shape: [1, ${twelve / 4}], bytes: ${twelve} }] }); out.write(header('TENS', ${twelve})); return;`,
      });
      assertCleanError(
        await spawnPopef(['run', MNIST, '--plugin', result, '--random']),
        2,
        /broke the protocol: tensor "softmax\/Softmax:0" is announced with 12884901888 bytes, more than the largest of the model's 1 output \(40\) \[E_PLUGIN\]/,
      );
    });
  });

  it('a result announcing 2 million tensors is refused before anything is allocated, and so is one announcing more tensors than the model has outputs', async () => {
    await inTempDir(async (dir) => {
      const million = await childPlugin(dir, 'million', {
        run: "const t = { name: '', dtype: 'U8', shape: [0], bytes: 0 }; send({ type: 'result', id: m.id, tensors: Array.from({ length: 2000000 }, () => t) }); return;",
      });
      const run = await spawnPopef(['run', MNIST, '--plugin', million, '--random']);
      assertCleanError(
        run,
        2,
        /plugin "[^"]*million" broke the protocol: a control message \(JSON frame\) of \d+ bytes exceeds the limit of 67108864 \[E_PLUGIN\]/,
      );
      const three = await childPlugin(dir, 'three', {
        run: "const t = { name: 'softmax/Softmax:0', dtype: 'F32', shape: [1, 10], bytes: 40 }; send({ type: 'result', id: m.id, tensors: [t, t, t] }, [Buffer.alloc(40), Buffer.alloc(40), Buffer.alloc(40)]); return;",
      });
      assertCleanError(
        await spawnPopef(['run', MNIST, '--plugin', three, '--random']),
        2,
        /broke the protocol: the reply announces 3 tensors, more than the model's 1 output \(1\) \[E_PLUGIN\]/,
      );
    });
  });

  it('a plugin that closes stdin after hello is reported within the timeout, saying so', async () => {
    await inTempDir(async (dir) => {
      const plugin = await childPlugin(dir, 'deaf', {
        // Its input is closed before the hello reply leaves, so the host's "open" meets a closed pipe. (Closed
        // after the reply, the race was the host's: an "open" small enough for the pipe's buffer, written
        // before the close, fails no write, and the run ended on the timeout instead, as in CI on 2026-12-02.)
        hello:
          "process.stdin.destroy(); setImmediate(() => { require('fs').closeSync(0); send({ type: 'hello', id: m.id, protocol: 'popef-plugin/1', available: true }); }); return;",
      });
      // Before, the report came after 12.2 s with --timeout 5 (2 s for an exit, then 10 s for a close nobody read).
      const run = await spawnPopef(['run', MNIST, '--plugin', plugin, '--random', '--timeout', '10']);
      assertCleanError(run, 2, /plugin "[^"]*deaf" closed its standard input during open without exiting, and was stopped \[E_PLUGIN\]/);
      assert.ok(run.ms < 10_000, `took ${run.ms} ms`);
    });
  });

  it('an in-process plugin whose open() calls process.exit(0) does not make popef run a silent exit 0', async () => {
    await inTempDir(async (dir) => {
      const plugin = await inProcessPlugin(dir, 'quitter', 'open: async () => { process.exit(0); }');
      const run = await spawnPopef(['run', MNIST, '--plugin', plugin, '--random']);
      assertCleanError(run, 2, /plugin "quitter" called process.exit\(0\) while it was asked to open the model \[E_PLUGIN\]/);
    });
  });

  it('an in-process plugin whose open() returns inputs: null is E_PLUGIN, exit 2 (not an internal error)', async () => {
    await inTempDir(async (dir) => {
      const plugin = await inProcessPlugin(
        dir,
        'nulls',
        'open: async () => ({ inputs: null, outputs: [], run: async () => new Map(), close: async () => {} })',
      );
      assertCleanError(
        await spawnPopef(['run', MNIST, '--plugin', plugin, '--random']),
        2,
        /plugin "nulls" returned from open\(\) "inputs" as null, not a list of tensor specs \[E_PLUGIN\]/,
      );
    });
  });
});

describe('misbehaving plugins', () => {
  it('refuses outputs of the wrong dtype, shape or size, even when --expect would pass them', async () => {
    await inTempDir(async (dir) => {
      const spec =
        "inputs: [{ name: 'input', dtype: 'F32', shape: [1, 1, 28, 28] }], outputs: [{ name: 'softmax/Softmax:0', dtype: 'F32', shape: [1, 10] }]";
      const cases: [string, string, RegExp][] = [
        [
          's8',
          "{ name: 'softmax/Softmax:0', dtype: 'S8', shape: [1, 10], data: new Uint8Array(10) }",
          /returned output "softmax\/Softmax:0" as S8 \[1, 10\], but the model's anchor is F32 \[1, 10\]/,
        ],
        [
          'short',
          "{ name: 'softmax/Softmax:0', dtype: 'F32', shape: [1, 10], data: new Uint8Array(12) }",
          /returned output "softmax\/Softmax:0" with 12 bytes, but F32 \[1, 10\] needs 40/,
        ],
        [
          'shape',
          "{ name: 'softmax/Softmax:0', dtype: 'F32', shape: [10], data: new Uint8Array(40) }",
          /as F32 \[10\], but the model's anchor is F32 \[1, 10\]/,
        ],
      ];
      const expected = join(dir, 'expected.npy');
      assert.equal((await spawnPopef(['run', MNIST, '--plugin', 'cpu', '--random', '--save-outputs', join(dir, 'saved')])).code, 0);
      await copyFile(join(dir, 'saved', 'softmax_Softmax_0.npy'), expected);
      for (const [name, output, message] of cases) {
        const plugin = await inProcessPlugin(
          dir,
          name,
          `open: async () => ({ ${spec}, run: async () => new Map([['softmax/Softmax:0', ${output}]]), close: async () => {} })`,
        );
        assertCleanError(await spawnPopef(['run', MNIST, '--plugin', plugin, '--random', '--expect', expected, '--atol', '1e9']), 2, message);
      }
      const lying = await inProcessPlugin(
        dir,
        'lying',
        "open: async () => ({ inputs: [{ name: 'input', dtype: 'F32', shape: [1, 1, 28, 28] }], outputs: [{ name: 'softmax/Softmax:0', dtype: 'F16', shape: [1, 10] }], run: async () => new Map(), close: async () => {} })",
      );
      assertCleanError(
        await spawnPopef(['run', MNIST, '--plugin', lying, '--random']),
        2,
        /plugin "lying" declares output "softmax\/Softmax:0" as F16 \[1, 10\], but the model's anchor is F32 \[1, 10\]/,
      );
    });
  });

  it('refuses a plugin that leaves out an output or an input, adds one, or answers run() with something else than a Map', async () => {
    await inTempDir(async (dir) => {
      const input = "{ name: 'input', dtype: 'F32', shape: [1, 1, 28, 28] }";
      const output = "{ name: 'softmax/Softmax:0', dtype: 'F32', shape: [1, 10] }";
      const tensor = "{ name: 'softmax/Softmax:0', dtype: 'F32', shape: [1, 10], data: new Uint8Array(40) }";
      const cases: [string, string, RegExp][] = [
        [
          'no-output',
          `inputs: [${input}], outputs: [${output}], run: async () => new Map()`,
          /plugin "no-output" returned no output "softmax\/Softmax:0" \[E_PLUGIN\]/,
        ],
        [
          'extra-output',
          `inputs: [${input}], outputs: [${output}], run: async () => new Map([['softmax/Softmax:0', ${tensor}], ['other', ${tensor}]])`,
          /plugin "extra-output" returned an output "other" that the model does not have \[E_PLUGIN\]/,
        ],
        [
          'no-map',
          `inputs: [${input}], outputs: [${output}], run: async () => [${tensor}]`,
          /plugin "no-map" returned something other than a Map of tensors from run\(\) \[E_PLUGIN\]/,
        ],
        [
          'no-input',
          `inputs: [], outputs: [${output}], run: async () => new Map()`,
          /plugin "no-input" does not declare the model's inputs "input" \[E_PLUGIN\]/,
        ],
        [
          'unknown-input',
          `inputs: [${input}, { name: 'extra', dtype: 'F32', shape: [1] }], outputs: [${output}], run: async () => new Map()`,
          /plugin "unknown-input" declares an input "extra" that the model does not have \[E_PLUGIN\]/,
        ],
      ];
      for (const [name, body, message] of cases) {
        const plugin = await inProcessPlugin(dir, name, `open: async () => ({ ${body}, close: async () => {} })`);
        assertCleanError(await spawnPopef(['run', MNIST, '--plugin', plugin, '--random']), 2, message);
      }
    });
  });

  it("reports an in-process plugin's exception as its failure, and ends one that never answers at --timeout", async () => {
    await inTempDir(async (dir) => {
      const thrower = await inProcessPlugin(dir, 'thrower', "open: async () => { throw new TypeError('no device'); }");
      assertCleanError(
        await spawnPopef(['run', MNIST, '--plugin', thrower, '--random']),
        2,
        /plugin "thrower" failed to open the model: no device \[E_PLUGIN\]/,
      );
      const hang = await inProcessPlugin(dir, 'hang', 'open: () => new Promise(() => setInterval(() => {}, 1000))');
      const run = await spawnPopef(['run', MNIST, '--plugin', hang, '--random', '--timeout', '1']);
      assertCleanError(run, 2, /plugin "hang" did not open the model within 1 s \[E_TIMEOUT\]/);
      assert.ok(run.ms < 5000, `took ${run.ms} ms`);
    });
  });

  it('disposing of a plugin program that died by itself still stops what it started (a long-running popef serve must not collect them)', async () => {
    const { ChildProcessPlugin } = await import('../../src/run/child-plugin.js');
    await inTempDir(async (dir) => {
      const marker = `popef-orphan-dead-${process.pid}-${Date.now()}`;
      const program = join(dir, 'dying-plugin');
      await writeFile(program, `#!/bin/sh\n'${process.execPath}' -e 'setInterval(() => {}, 1000)' ${marker} &\nexit 3\n`);
      await chmod(program, 0o755);
      const plugin = new ChildProcessPlugin({ name: 'dying', command: program, env: process.env });
      await assert.rejects(plugin.probe(), /plugin "dying" exited with status 3/);
      // The shell may exit before its background child has exec'd node (until then the child's command line is the
      // shell's, without the marker): on a loaded machine it did, and a single look found nothing. Wait for the exec.
      await until(() => processRunning(marker), 10_000, 'the grandchild should still run before dispose');
      await plugin.dispose();
      await until(async () => !(await processRunning(marker)), 2000);
      // The hello may hit the closed pipe before the exit is seen: either way the report is the exit, never a bare EPIPE (exit 3).
      for (let i = 0; i < 3; i++)
        assertCleanError(
          await spawnPopef(['run', MNIST, '--plugin', program, '--random']),
          2,
          /plugin "[^"]*dying-plugin" exited with status 3 during hello \[E_PLUGIN\]/,
        );
      await until(async () => !(await processRunning(marker)), 2000);
    });
  });

  it('stops a plugin program and the processes it started, at --timeout and at Ctrl-C', async () => {
    await inTempDir(async (dir) => {
      const marker = `popef-orphan-${process.pid}-${Date.now()}`;
      const program = join(dir, 'shell-plugin');
      // A shell that starts a child of its own and waits for it: the child holds popef's pipes, and carries the marker.
      await writeFile(program, `#!/bin/sh\n'${process.execPath}' -e 'setInterval(() => {}, 1000)' ${marker} &\nwait\n`);
      await chmod(program, 0o755);
      const timing = spawnPopef(['run', MNIST, '--plugin', program, '--random', '--timeout', '1'], { timeoutMs: 30_000 });
      // The descendant is seen running first, so that its absence afterwards says it was stopped, not that it never started.
      await until(() => processRunning(marker), 10_000, "the plugin's own child should run before the timeout");
      const timedOut = await timing;
      assertCleanError(timedOut, 2, /did not answer "hello" within \d+ s and was stopped \[E_TIMEOUT\]/);
      await until(async () => !(await processRunning(marker)), 2000, 'a descendant of the plugin survived the timeout');
      const interrupted = await spawnPopef(['run', MNIST, '--plugin', program, '--random'], {
        interrupt: { signal: 'SIGINT', when: () => until(() => processRunning(marker)) },
      });
      assert.equal(interrupted.hung, false);
      assert.equal(interrupted.code, 130, interrupted.stderr);
      assert.ok((interrupted.stopMs ?? Infinity) < 1000, `stopped ${interrupted.stopMs ?? '?'} ms after Ctrl-C`);
      await until(async () => !(await processRunning(marker)), 2000);
    });
  });
});

describe('interrupts', () => {
  it('Ctrl-C stops a timed run within 1 s, with exit 130', async () => {
    const run = await spawnPopef(['run', MNIST, '--plugin', 'cpu', '--random', '--duration', '100'], {
      interrupt: { signal: 'SIGINT', when: afterLoading('onnxruntime', 300) },
    });
    assert.equal(run.hung, false);
    assert.equal(run.code, 130, run.stderr);
    assert.ok((run.stopMs ?? Infinity) < 1000, `stopped ${run.stopMs ?? '?'} ms after Ctrl-C`);
  });

  it('SIGTERM stops a timed run within 1 s, with exit 143', async () => {
    const run = await spawnPopef(['run', MNIST, '--plugin', 'cpu', '--random', '--duration', '100'], {
      interrupt: { signal: 'SIGTERM', when: afterLoading('onnxruntime', 300) },
    });
    assert.equal(run.code, 143, run.stderr);
    assert.ok((run.stopMs ?? Infinity) < 1000, `stopped ${run.stopMs ?? '?'} ms after SIGTERM`);
  });

  it('Ctrl-C during an IPU run (simulated SDK) stops the bridge and removes its copy of the model', async () => {
    await inTempDir(async (dir) => {
      const env = { PYTHONPATH: fixture('sim-sdk'), SIM_SDK_FAIL: 'hang-on-run', TMPDIR: dir };
      const run = await spawnPopef(['run', MNIST, '--plugin', 'ipu', '--random'], {
        env,
        interrupt: { signal: 'SIGINT', when: () => until(async () => (await readdir(dir)).some((f) => f.startsWith('popef-ipu-bridge-'))) },
      });
      assert.equal(run.code, 130, run.stderr);
      assert.ok((run.stopMs ?? Infinity) < 1000, `stopped ${run.stopMs ?? '?'} ms after Ctrl-C`);
      await until(async () => (await readdir(dir)).length === 0, 2000).catch(async () => {
        assert.fail(`left in the temporary directory: ${(await readdir(dir)).join(', ')}`);
      });
    });
  });

  it('after SIGKILL mid-write, the next run removes what the killed one left and succeeds', async () => {
    await inTempDir(async (dir) => {
      // What a killed pack, config and scaffold leave: temporary files and a staging directory named for a process that is gone.
      const host = hostname().replace(/[^A-Za-z0-9]/g, '_');
      const deadPid = 2 ** 22 + 17; // above Linux's pid_max ceiling: never a live process
      const repo = join(dir, 'repo');
      await mkdir(repo);
      await writeFile(join(dir, `.out.popef.popef-tmp-${host}-${deadPid}-0123456789ab`), 'partial');
      const staging = join(repo, `.mnist.popef-staging-${host}-${deadPid}-0123456789ab`);
      await mkdir(join(staging, '1'), { recursive: true });
      await writeFile(join(staging, '1', 'executable.popef'), 'partial');
      // A live process's temporary file (ours) must survive another run's clean-up.
      const live = join(dir, `.out.popef.popef-tmp-${host}-${process.pid}-ba9876543210`);
      await writeFile(live, 'in progress');
      const unpacked = join(dir, 'u');
      assert.equal((await spawnPopef(['unpack', MNIST, '-o', unpacked])).code, 0);
      assert.equal((await spawnPopef(['pack', join(unpacked, 'manifest.json'), '-o', join(dir, 'out.popef')])).code, 0);
      const scaffold = await spawnPopef(['scaffold', MNIST, '-r', repo, '-m', 'mnist']);
      assert.equal(scaffold.code, 0, scaffold.stderr);
      assert.deepEqual((await readdir(repo)).sort(), ['mnist']);
      assert.deepEqual((await readdir(dir)).sort(), [`.out.popef.popef-tmp-${host}-${process.pid}-ba9876543210`, 'out.popef', 'repo', 'u']);
    });
  });

  it('SIGKILL in the middle of pack, unpack and scaffold of a large model: the re-run succeeds and nothing of ours is left', async () => {
    await inTempDir(async (dir) => {
      // A model with a 192 MiB weight, so that each command is still writing when it is killed.
      const { PopefWriter } = await import('../../src/format/writer.js');
      const { emptyMetadata } = await import('../../src/schema/model.js');
      const big = join(dir, 'big.popef');
      const w = await PopefWriter.create(big);
      await w.writeExecutable('exe', new Uint8Array(64));
      const anchors = [
        {
          name: 'x',
          handle: 'h2d_x',
          tensorInfo: { dtype: 'F32' as const, shape: [1, 4] },
          isPerReplica: false,
          type: 'INPUT' as const,
          programs: [5],
        },
        {
          name: 'y',
          handle: 'anchor_d2h_y',
          tensorInfo: { dtype: 'F32' as const, shape: [1, 4] },
          isPerReplica: false,
          type: 'OUTPUT' as const,
          programs: [5],
        },
        {
          name: 'w',
          handle: '',
          tensorInfo: { dtype: 'F32' as const, shape: [48, 1024, 1024] },
          isPerReplica: false,
          type: 'UNKNOWN' as const,
          programs: [],
        },
      ];
      await w.writeMetadata({ ...emptyMetadata('exe'), anchors, programFlow: { load: [], main: [5], save: [] } });
      const chunk = new Uint8Array(4 * 1024 * 1024).fill(3);
      await w.writeTensorData(
        { name: 'w', tensorInfo: { dtype: 'F32', shape: [48, 1024, 1024] } },
        Array.from({ length: 48 }, () => chunk),
      );
      await w.close();
      const ours = (names: string[]): string[] => names.filter((n) => /\.popef-(tmp|staging)-/.test(n));
      const killMidWrite = async (args: string[], where: string): Promise<void> => {
        const run = await spawnPopef(args, {
          timeoutMs: 60_000,
          interrupt: { signal: 'SIGKILL', when: () => until(async () => ours(await readdir(where)).length > 0, 30_000) },
        });
        assert.equal(run.signal, 'SIGKILL', `${args[0] ?? ''} finished before it could be killed`);
        assert.ok(ours(await readdir(where)).length > 0, 'the killed run left its temporary file (as SIGKILL must)');
        const again = await spawnPopef(args, { timeoutMs: 60_000 });
        assert.equal(again.code, 0, again.stderr);
        assert.deepEqual(ours(await readdir(where)), [], `${args[0] ?? ''}: left behind after the re-run`);
      };
      const unpacked = join(dir, 'u');
      await killMidWrite(['unpack', big, '-o', unpacked], dir);
      await killMidWrite(['pack', join(unpacked, 'manifest.json'), '-o', join(dir, 'again.popef')], dir);
      const repo = join(dir, 'repo');
      await mkdir(repo);
      await killMidWrite(['scaffold', big, '-r', repo, '-m', 'big'], repo);
      assert.deepEqual((await readdir(repo)).sort(), ['big']);
    });
  });

  it('Ctrl-C at seeded random moments of pack and unpack: each run either completes or leaves nothing, within 1 s', async () => {
    const { seededRandom } = await import('../../src/run/tensor-io/inputs.js');
    const { PopefWriter } = await import('../../src/format/writer.js');
    const { emptyMetadata } = await import('../../src/schema/model.js');
    await inTempDir(async (dir) => {
      const model = join(dir, 'model.popef');
      const w = await PopefWriter.create(model);
      await w.writeExecutable('exe', new Uint8Array(64));
      await w.writeMetadata({
        ...emptyMetadata('exe'),
        anchors: [
          { name: 'w', handle: '', tensorInfo: { dtype: 'F32', shape: [32, 1024, 1024] }, isPerReplica: false, type: 'UNKNOWN', programs: [] },
        ],
      });
      await w.writeTensorData(
        { name: 'w', tensorInfo: { dtype: 'F32', shape: [32, 1024, 1024] } },
        Array.from({ length: 32 }, () => new Uint8Array(4 * 1024 * 1024).fill(5)),
      );
      await w.close();
      const unpacked = join(dir, 'u');
      assert.equal((await spawnPopef(['unpack', model, '-o', unpacked])).code, 0);
      // Which runs stop part way and which complete depends on the machine's speed; the invariant holds for each.
      const random = seededRandom(13);
      for (let i = 0; i < 6; i++) {
        const afterMs = Math.floor(random() * 700);
        const unpack = i % 2 === 0;
        const out = join(dir, unpack ? `u${i}` : `p${i}.popef`);
        const args = unpack ? ['unpack', model, '-o', out] : ['pack', join(unpacked, 'manifest.json'), '-o', out];
        const run = await spawnPopef(args, { interrupt: { signal: 'SIGINT', afterMs } });
        const where = `${args[0] ?? ''} interrupted after ${afterMs} ms`;
        assert.equal(run.hung, false, where);
        // Before popef has installed its handler (Node still starting), Ctrl-C ends the process by the signal itself: nothing was written yet.
        const stopped = run.code === 130 || run.signal === 'SIGINT';
        assert.ok(run.code === 0 || stopped, `${where}: exit ${run.code ?? run.signal ?? '?'}\n${run.stderr}`);
        if (stopped) assert.ok((run.stopMs ?? 0) < 1000, `${where}: stopped ${run.stopMs ?? '?'} ms after Ctrl-C`);
        const names = await readdir(dir);
        assert.deepEqual(
          names.filter((n) => /\.popef-(tmp|staging)-/.test(n)),
          [],
          `${where}: temporary files left`,
        );
        // A Ctrl-C as Node tears down used to kill runs whose output was already whole (bin.ts says why it exits itself).
        if (stopped)
          assert.ok(!names.includes(unpack ? `u${i}` : `p${i}.popef`), `${where}: exit ${run.code ?? run.signal ?? '?'}, yet the output is there`);
        else
          assert.equal(
            (await spawnPopef(unpack ? ['dump', '--verify', model] : ['dump', '--verify', out])).code,
            0,
            `${where}: the completed output does not verify`,
          );
      }
    });
  });

  it('puts back an output directory that a killed unpack --force had moved aside, before deciding whether it exists', async () => {
    await inTempDir(async (dir) => {
      const host = hostname().replace(/[^A-Za-z0-9]/g, '_');
      const { rename, readFile } = await import('node:fs/promises');
      const out = join(dir, 'u');
      assert.equal((await spawnPopef(['unpack', MNIST, '-o', out])).code, 0);
      const manifest = await readFile(join(out, 'manifest.json'), 'utf8');
      // Killed between moving the old output aside and moving the new one in.
      await rename(out, join(dir, `.u.popef-staging-${host}-${2 ** 22 + 9}-00000000000b.old`));
      const refused = await spawnPopef(['unpack', MNIST, '-o', out]);
      assertCleanError(refused, 2, /output directory already exists \[E_EXISTS\]/);
      assert.equal(await readFile(join(out, 'manifest.json'), 'utf8'), manifest, 'the earlier output is back');
      assert.equal((await spawnPopef(['unpack', MNIST, '-o', out, '--force'])).code, 0);
      assert.deepEqual((await readdir(dir)).sort(), ['u']);
    });
  });

  it('puts back a model entry that a killed scaffold --force had moved aside', async () => {
    await inTempDir(async (dir) => {
      const host = hostname().replace(/[^A-Za-z0-9]/g, '_');
      const repo = join(dir, 'repo');
      assert.equal((await spawnPopef(['scaffold', MNIST, '-r', repo, '-m', 'mnist'])).code, 0);
      // Killed between moving config.pbtxt aside and moving the new one in.
      const { rename, readFile } = await import('node:fs/promises');
      const original = await readFile(join(repo, 'mnist', 'config.pbtxt'), 'utf8');
      await rename(join(repo, 'mnist', 'config.pbtxt'), join(repo, `.mnist.popef-staging-${host}-${2 ** 22 + 5}-00000000000a.old-config.pbtxt`));
      const again = await spawnPopef(['validate', repo]);
      assert.equal(again.code, 1); // the config is missing until the next write puts it back
      const rerun = await spawnPopef(['scaffold', MNIST, '-r', repo, '-m', 'mnist', '--force']);
      assert.equal(rerun.code, 0, rerun.stderr);
      assert.deepEqual((await readdir(repo)).sort(), ['mnist']);
      assert.equal(await readFile(join(repo, 'mnist', 'config.pbtxt'), 'utf8'), original);
    });
  });
});
