/**
 * Benchmark for popef import (issue 9): a model with 1 GiB of tensor data.
 *
 * - through the IPU bridge and the simulated SDK, as a user runs it: wall
 *   time against cp of the same bytes, and the toolkit process's peak RSS
 *   (the bridge is a separate process: its memory is not in the figure,
 *   its time is);
 * - through test/bench/fast-bridge.mjs, a stand-in bridge that streams the
 *   payload straight from the page cache: the toolkit's side with the
 *   bridge's own cost aside, which is what the target is about.
 *
 * Needs python3 with numpy and about 4 GiB of free disk in the temp dir.
 * Run: npm run build && tsx test/bench/import.ts
 */
import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ModelSet, PopefWriter, emptyMetadata, type Metadata } from '../../src/index.js';
import { ChildProcessPlugin } from '../../src/run/child-plugin.js';
import { importSdkFiles } from '../../src/run/sdk-convert.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = join(ROOT, 'bin/popef.cjs');
const RSS_HOOK = join(ROOT, 'test/bench/max-rss.mjs');
const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
const env = { ...process.env, PYTHONPATH: join(ROOT, 'fixtures/sim-sdk') };

const dir = await mkdtemp(join(tmpdir(), 'popef-bench-import-'));

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? NaN;
}

function fmt(n: number, digits = 2): string {
  return n.toFixed(digits);
}

function timed(cmd: string, args: string[], rssFile?: string): number {
  const start = process.hrtime.bigint();
  const r = spawnSync(cmd, args, { env: rssFile === undefined ? env : { ...env, BENCH_RSS_FILE: rssFile }, stdio: ['ignore', 'ignore', 'pipe'] });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed: ${r.stderr.toString()}`);
  return Number(process.hrtime.bigint() - start) / 1e6;
}

try {
  const raw = join(dir, 'weights.bin');
  const open = join(dir, 'model.popef');
  const sdk = join(dir, 'model.sdk.popef');
  {
    const out = createWriteStream(raw);
    const block = new Uint8Array(4 * MiB).map((_, i) => (i * 2654435761) >>> 24);
    for (let i = 0; i < 256; i++) if (!out.write(block)) await once(out, 'drain');
    out.end();
    await once(out, 'finish');
  }
  const metadata: Metadata = {
    ...emptyMetadata('bench'),
    anchors: [{ name: 'weights', handle: 'weights', tensorInfo: { dtype: 'U8', shape: [GiB] }, isPerReplica: false, type: 'INPUT', programs: [0] }],
    programFlow: { load: [0], main: [1], save: [] },
  };
  const w = await PopefWriter.create(open, { force: true });
  await w.writeExecutable('bench', [new Uint8Array(1024).fill(7)]);
  await w.writeTensorData({ name: 'weights', tensorInfo: { dtype: 'U8', shape: [GiB] } }, createReadStream(raw, { highWaterMark: 4 * MiB }));
  await w.writeMetadata(metadata);
  await w.close();
  timed(process.execPath, [BIN, 'export', open, '-o', sdk]);
  // What the stand-in bridge sends: the metadata in its JSON form, as read back.
  const set = await ModelSet.open([open]);
  const metadataJson = JSON.stringify(set.models[0]?.metadata);
  await set.close();
  await rm(open);

  console.log('[issue 9] popef import of a model with 1 GiB of tensor data vs cp of the same bytes (median of 3)');
  spawnSync('cat', [sdk, raw], { stdio: ['ignore', 'ignore', 'ignore'] }); // warm the page cache
  const cp: number[] = [];
  const viaSim: number[] = [];
  const viaFast: number[] = [];
  const rssFile = join(dir, 'rss.txt');
  await writeFile(rssFile, '');
  // Each measured write starts with no dirty pages queued, so that none of
  // them pays for the write-back of the one before.
  const settle = (): void => void spawnSync('sync');
  for (let i = 0; i < 3; i++) {
    settle();
    cp.push(timed('cp', [raw, join(dir, 'copy.bin')]));
    await rm(join(dir, 'copy.bin'));
    settle();
    viaSim.push(timed(process.execPath, ['--import', RSS_HOOK, BIN, 'import', sdk, '-o', join(dir, 'back.popef'), '--force'], rssFile));
    const fast = new ChildProcessPlugin({
      name: 'fast',
      command: process.execPath,
      args: [join(ROOT, 'test/bench/fast-bridge.mjs')],
      env: { ...process.env, FAST_BRIDGE_PAYLOAD: raw, FAST_BRIDGE_METADATA: metadataJson },
    });
    await fast.probe();
    settle();
    const start = process.hrtime.bigint();
    const r = await importSdkFiles(fast, [sdk], join(dir, 'fast.popef'), { force: true });
    viaFast.push(Number(process.hrtime.bigint() - start) / 1e6);
    await fast.dispose();
    if (r.bytes !== GiB + 1024) throw new Error(`the fast bridge moved ${r.bytes} bytes`);
  }
  const rss = Math.max(...(await readFile(rssFile, 'utf8')).split('\n').filter(Boolean).map(Number)) / 1024;
  const c = median(cp);
  const s = median(viaSim);
  const f = median(viaFast);
  console.log(`  cp: ${fmt(c, 0)} ms (${fmt(1024 / (c / 1000), 0)} MiB/s)`);
  console.log(`  popef import, simulated SDK bridge: ${fmt(s, 0)} ms (${fmt(1024 / (s / 1000), 0)} MiB/s) = ${fmt(c / s)} of cp, bridge included`);
  console.log(`  peak RSS of the toolkit process: ${fmt(rss, 1)} MiB (target < 150)`);
  console.log(
    `  toolkit side alone (stand-in bridge, in process): ${fmt(f, 0)} ms (${fmt(1024 / (f / 1000), 0)} MiB/s) = ${fmt(c / f)} of cp (target >= 0.5)`,
  );
} finally {
  await rm(dir, { recursive: true, force: true });
}
