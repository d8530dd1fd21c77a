/**
 * The out-of-process plugin protocol with an echo plugin (test/run/echo-plugin):
 * a 64 MiB tensor each way, timed one direction at a time (target: 1 GiB/s
 * or more each way), the same echoed, and round trips of a tiny
 * request (target: a median host overhead of 100 us or less over 10,000
 * runs). Prints figures only. Run: npx tsx test/bench/protocol.ts
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PopefWriter, emptyMetadata } from '../../src/index.js';
import { ChildProcessPlugin } from '../../src/run/child-plugin.js';
import { ipuPlugin } from '../../src/run/load-plugin.js';
import type { OpenedModel, RunOptions, Tensor } from '../../src/run/plugin-api.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dir = await mkdtemp(join(tmpdir(), 'popef-bench-protocol-'));

async function model(path: string, shape: number[]): Promise<void> {
  const w = await PopefWriter.create(path);
  await w.writeExecutable('e', new Uint8Array(16));
  await w.writeMetadata({
    ...emptyMetadata('e'),
    programFlow: { load: [], main: [5], save: [] },
    anchors: [{ name: 'x', handle: 'h2d_x', tensorInfo: { dtype: 'F32', shape }, isPerReplica: false, type: 'INPUT', programs: [5] }],
  });
  await w.close();
}

/**
 * Microseconds per run, sorted, after `warmups` untimed runs; `check` sees each
 * timed run's outputs. With `lend`, each run receives into the previous run's
 * buffers, as popef run's timed loop does.
 */
async function timeRuns(
  opened: OpenedModel,
  inputs: ReadonlyMap<string, Tensor>,
  o: { warmups: number; runs: number; lend: boolean; check: (out: Map<string, Tensor>) => void },
): Promise<number[]> {
  let previous = new Map<string, Tensor>();
  const options = (): RunOptions | undefined => (o.lend ? { into: new Map([...previous].map(([k, t]) => [k, t.data])) } : undefined);
  for (let i = 0; i < o.warmups; i++) previous = await opened.run(inputs, options());
  const times: number[] = [];
  for (let i = 0; i < o.runs; i++) {
    const start = process.hrtime.bigint();
    previous = await opened.run(inputs, options());
    times.push(Number(process.hrtime.bigint() - start) / 1e3);
    o.check(previous);
  }
  await opened.close();
  return times.sort((a, b) => a - b);
}

/** Median-sorted microseconds per run; `outputBytes` makes the child answer with that many bytes instead of the echo. */
async function measure(shape: number[], runs: number, outputBytes?: number, lend = false): Promise<number[]> {
  const path = join(dir, `m-${shape.join('x')}-${outputBytes ?? 'echo'}-${lend ? 'lent' : 'fresh'}.popef`);
  await model(path, shape);
  const env = outputBytes === undefined ? process.env : { ...process.env, ECHO_PLUGIN_OUTPUT_BYTES: String(outputBytes) };
  const plugin = new ChildProcessPlugin({ name: 'echo', command: join(ROOT, 'test/run/echo-plugin'), env });
  try {
    const opened = await plugin.open({ files: [path], executable: 'e', options: {} });
    const bytes = shape.reduce((p, d) => p * d, 4);
    const input: Tensor = { name: 'x', dtype: 'F32', shape, data: new Uint8Array(bytes).fill(7) };
    return await timeRuns(opened, new Map([['x', input]]), {
      warmups: Math.min(20, runs),
      runs,
      lend,
      check: (out) => {
        const got = outputBytes === undefined ? out.get('x:echo')?.data.byteLength : outputBytes === 0 ? 0 : out.get('out')?.data.byteLength;
        if (got !== (outputBytes ?? bytes)) throw new Error('echo lost bytes');
      },
    });
  } finally {
    await plugin.dispose();
  }
}

/** Runs of a model with input x (F32 `inShape`) and output y (F32 `outShape`) through ipu_bridge.py and the null runtime. */
async function measureBridge(inShape: number[], outShape: number[], runs: number, lend = false): Promise<number[]> {
  const path = join(dir, `b-${inShape.join('x')}-${outShape.join('x')}-${lend ? 'lent' : 'fresh'}.popef`);
  const w = await PopefWriter.create(path);
  await w.writeExecutable('e', new Uint8Array(16));
  await w.writeMetadata({
    ...emptyMetadata('e'),
    programFlow: { load: [], main: [5], save: [] },
    anchors: [
      { name: 'x', handle: 'h2d_x', tensorInfo: { dtype: 'F32', shape: inShape }, isPerReplica: false, type: 'INPUT', programs: [5] },
      { name: 'y', handle: 'd2h_y', tensorInfo: { dtype: 'F32', shape: outShape }, isPerReplica: false, type: 'OUTPUT', programs: [5] },
    ],
  });
  await w.close();
  const env = { ...process.env, PYTHONPATH: `${join(ROOT, 'test/bench/null-runtime')}:${join(ROOT, 'fixtures/sim-sdk')}` };
  const plugin = ipuPlugin({ cwd: ROOT, env });
  try {
    const opened = await plugin.open({ files: [path], executable: 'e', options: {} });
    const bytes = inShape.reduce((p, d) => p * d, 4);
    const inputs = new Map([['x', { name: 'x', dtype: 'F32' as const, shape: inShape, data: new Uint8Array(bytes).fill(7) }]]);
    return await timeRuns(opened, inputs, {
      warmups: 3,
      runs,
      lend,
      check: (out) => {
        if (out.get('y')?.data.byteLength !== outShape.reduce((p, d) => p * d, 4)) throw new Error('the bridge lost bytes');
      },
    });
  } finally {
    await plugin.dispose();
  }
}

try {
  const MiB64 = 64 * 2 ** 20;
  const gib = MiB64 / 2 ** 30;
  const median = (t: number[]): number => t[Math.floor(t.length / 2)] ?? NaN;
  // Each direction on its own: 64 MiB in with nothing back, then 4 bytes in with 64 MiB back.
  const toChild = median(await measure([16, 1024, 1024], 20, 0));
  const toHost = median(await measure([1], 20, MiB64));
  const toHostLent = median(await measure([1], 20, MiB64, true));
  const both = median(await measure([16, 1024, 1024], 20));
  console.log(`64 MiB host -> plugin: median ${(toChild / 1000).toFixed(1)} ms = ${(gib / (toChild / 1e6)).toFixed(2)} GiB/s (target >= 1 GiB/s)`);
  console.log(
    `64 MiB plugin -> host, into the previous run's buffer (popef run's loop): median ${(toHostLent / 1000).toFixed(1)} ms = ${(gib / (toHostLent / 1e6)).toFixed(2)} GiB/s (target >= 1 GiB/s)`,
  );
  console.log(`64 MiB plugin -> host, into fresh memory: median ${(toHost / 1000).toFixed(1)} ms = ${(gib / (toHost / 1e6)).toFixed(2)} GiB/s`);
  console.log(`64 MiB echoed (both ways in one run): median ${(both / 1000).toFixed(1)} ms = ${((2 * gib) / (both / 1e6)).toFixed(2)} GiB/s moved`);
  // The same through the real IPU bridge (Python), on a runtime that computes nothing (test/bench/null-runtime).
  const toBridge = median(await measureBridge([16, 1024, 1024], [1], 20));
  const fromBridge = median(await measureBridge([1], [16, 1024, 1024], 20));
  const fromBridgeLent = median(await measureBridge([1], [16, 1024, 1024], 20, true));
  console.log(
    `64 MiB host -> IPU bridge: median ${(toBridge / 1000).toFixed(1)} ms = ${(gib / (toBridge / 1e6)).toFixed(2)} GiB/s (target >= 1 GiB/s)`,
  );
  console.log(
    `64 MiB IPU bridge -> host, into the previous run's buffer (popef run's loop): median ${(fromBridgeLent / 1000).toFixed(1)} ms = ${(gib / (fromBridgeLent / 1e6)).toFixed(2)} GiB/s (target >= 1 GiB/s)`,
  );
  console.log(
    `64 MiB IPU bridge -> host, into fresh memory: median ${(fromBridge / 1000).toFixed(1)} ms = ${(gib / (fromBridge / 1e6)).toFixed(2)} GiB/s`,
  );
  const tiny = await measure([1], 10_000);
  const medianTiny = median(tiny);
  console.log(
    `tiny request round trip (host + echo child): median ${medianTiny.toFixed(1)} us, p90 ${(tiny[Math.floor(tiny.length * 0.9)] ?? NaN).toFixed(1)} us over 10,000 runs (target <= 100 us of host overhead)`,
  );
} finally {
  await rm(dir, { recursive: true, force: true });
}
