/**
 * Benchmarks for the figures the issues name. Prints figures; asserts
 * nothing (timed assertions do not belong in unit tests). Run: npm run bench
 * (after npm run build). Needs about 5.5 GiB of free disk in the temp dir.
 *
 * - open + metadata of a 4 GiB PopEF vs a 4 MiB one (library, in process);
 * - popef dump (text and --json) of both files vs `node -e 1`, with peak RSS;
 * - start-up: popef dump with and without its compile cache beside `node -e 1`;
 * - popef pack of a 1 GiB payload vs cp of the same bytes, with peak RSS.
 */
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, createWriteStream, fstatSync, openSync, readSync } from 'node:fs';
import { startServer } from '../io/http-server.js';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ModelSet, PopefWriter, emptyMetadata, type Anchor } from '../../src/index.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = join(ROOT, 'bin/popef.cjs');
const RSS_HOOK = join(ROOT, 'test/bench/max-rss.mjs');
const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

const dir = await mkdtemp(join(tmpdir(), 'popef-bench-'));
// The CLI's compile cache goes to a directory of the benchmark's own, not the user's.
process.env.XDG_CACHE_HOME = join(dir, 'cache');

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? NaN;
}

/**
 * Runs a command `runs` times; returns the median wall time (ms), and for
 * Node commands the peak RSS (MiB) of one more run. The RSS hook is an
 * --import module, which starts Node's ES module loader: it stays out of the
 * timed runs, where it would add the same milliseconds to popef and to the
 * `node -e ""` baseline alike and so flatter the ratio.
 */
async function measure(
  cmd: string,
  args: string[],
  runs: number,
  node = false,
  extraEnv: Record<string, string> = {},
): Promise<{ ms: number; rssMiB: number }> {
  const times: number[] = [];
  const rssFile = join(dir, 'rss.txt');
  await writeFile(rssFile, '');
  const once = (withHook: boolean): void => {
    const r = spawnSync(cmd, withHook ? ['--import', RSS_HOOK, ...args] : args, {
      env: { ...process.env, ...extraEnv, BENCH_RSS_FILE: rssFile },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed: ${r.stderr.toString()}`);
  };
  for (let i = 0; i < runs; i++) {
    const start = process.hrtime.bigint();
    once(false);
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  if (node) once(true);
  const rss = (await readFile(rssFile, 'utf8')).split('\n').filter(Boolean).map(Number);
  return { ms: median(times), rssMiB: rss.length > 0 ? Math.max(...rss) / 1024 : NaN };
}

interface Case {
  readonly label: string;
  readonly args: string[];
  readonly env: NodeJS.ProcessEnv;
}

/**
 * Median wall time (ms) of each Node command, run in turn `runs` times, so
 * that every ratio compares runs made at the same moments (this machine's
 * speed drifts by a third over minutes). One run of each first: it writes
 * a command's compile cache.
 */
function interleaved(cases: readonly Case[], runs: number): number[] {
  const once = (c: Case): number => {
    const start = process.hrtime.bigint();
    const r = spawnSync(process.execPath, c.args, { env: c.env, stdio: ['ignore', 'ignore', 'pipe'] });
    if (r.status !== 0 && r.status !== 1) throw new Error(`${c.label} failed: ${r.stderr.toString()}`);
    return Number(process.hrtime.bigint() - start) / 1e6;
  };
  for (const c of cases) once(c);
  const times = cases.map(() => [] as number[]);
  for (let i = 0; i < runs; i++) cases.forEach((c, k) => times[k]?.push(once(c)));
  return times.map(median);
}

/** Writes a model with an executable of `size` bytes (streamed, never whole in memory) and realistic metadata. */
async function makeModel(path: string, size: number): Promise<void> {
  const chunk = new Uint8Array(16 * MiB).map((_, i) => (i * 2654435761) >>> 24);
  async function* body(): AsyncGenerator<Uint8Array> {
    for (let left = size; left > 0; left -= chunk.byteLength) yield left >= chunk.byteLength ? chunk : chunk.subarray(0, left);
    await Promise.resolve();
  }
  const anchors: Anchor[] = [];
  for (let i = 0; i < 200; i++) {
    anchors.push({
      name: `input/${i}`,
      handle: `h2d_input/${i}`,
      tensorInfo: { dtype: 'F16', shape: [8, 384, 1024] },
      isPerReplica: false,
      type: 'INPUT',
      programs: [5],
    });
  }
  const w = await PopefWriter.create(path, { force: true });
  await w.writeExecutable('bench', body());
  await w.writeMetadata({ ...emptyMetadata('bench'), anchors, programFlow: { load: [0], main: [5], save: [] } });
  await w.close();
}

async function openTimes(path: string, runs: number): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = process.hrtime.bigint();
    const set = await ModelSet.open([path]);
    if (set.models[0]?.metadata?.anchors.length !== 200) throw new Error('metadata not read');
    await set.close();
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  return median(times);
}

const fmt = (n: number, digits = 2): string => n.toFixed(digits);

try {
  const small = join(dir, 'small.popef');
  const big = join(dir, 'big.popef');
  console.log('writing a 4 MiB and a 4 GiB model...');
  await makeModel(small, 4 * MiB);
  let start = process.hrtime.bigint();
  await makeModel(big, 4 * GiB);
  const writeS = Number(process.hrtime.bigint() - start) / 1e9;
  console.log(`  4 GiB written by PopefWriter in ${fmt(writeS, 1)} s (${fmt(4096 / writeS, 0)} MiB/s)`);

  console.log('\n[issue 2] open + read all metadata (library, median of 50)');
  await openTimes(small, 5);
  const tSmall = await openTimes(small, 50);
  const tBig = await openTimes(big, 50);
  console.log(`  4 MiB: ${fmt(tSmall, 3)} ms   4 GiB: ${fmt(tBig, 3)} ms   ratio ${fmt(tBig / tSmall)} (target <= 1.10)`);
  const openRss = await measure(
    process.execPath,
    ['-e', `import('${join(ROOT, 'dist/index.js')}').then(async (m) => { const s = await m.ModelSet.open(['${big}']); await s.close(); })`],
    3,
    true,
  );
  console.log(`  peak RSS of a process that opens the 4 GiB file with the built library: ${fmt(openRss.rssMiB, 1)} MiB (target < 80)`);

  // The 4 GiB just written is still being flushed to disk; that work would land in the timings below.
  spawnSync('sync');
  console.log('\n[issue 3] popef dump (CLI), interleaved with node -e 1, median of 10');
  {
    const rows: { label: string; args: string[] }[] = [{ label: 'node -e 1', args: ['-e', '1'] }];
    for (const flags of [[], ['--json']])
      for (const file of [small, big]) rows.push({ label: `${flags.join(' ')} ${file}`, args: [BIN, 'dump', ...flags, file] });
    const ms = interleaved(
      rows.map((r) => ({ ...r, env: process.env })),
      10,
    );
    // One at a time: measure() collects peak RSS through one shared file.
    const rss: number[] = [];
    for (const r of rows) rss.push((await measure(process.execPath, r.args, 0, true)).rssMiB);
    const base = ms[0] ?? NaN;
    console.log(`  node -e 1: ${fmt(base, 1)} ms, ${fmt(rss[0] ?? NaN, 1)} MiB`);
    for (const [i, label] of ['default', '--json'].entries()) {
      const s = ms[1 + 2 * i] ?? NaN;
      const b = ms[2 + 2 * i] ?? NaN;
      console.log(
        `  dump ${label}: 4 MiB ${fmt(s, 1)} ms, 4 GiB ${fmt(b, 1)} ms (x${fmt(b / base)} of node -e, target <= 1.5; ` +
          `4 GiB/4 MiB ${fmt(b / s)}, target <= 1.10), peak RSS ${fmt(rss[2 + 2 * i] ?? NaN, 1)} MiB (target < 80)`,
      );
    }
  }

  console.log('\n[issue 14] start-up beside node -e 1 (dump of the 4 GiB file, and other commands), interleaved, median of 30');
  {
    const env = process.env;
    const cases: Case[] = [
      { label: 'node -e 1', args: ['-e', '1'], env },
      { label: 'popef dump, compile cache', args: [BIN, 'dump', big], env },
      { label: 'popef dump, no cache (first run)', args: [BIN, 'dump', big], env: { ...env, POPEF_NO_COMPILE_CACHE: '1' } },
      { label: 'popef --version, compile cache', args: [BIN, '--version'], env },
      { label: 'popef validate (small repository)', args: [BIN, 'validate', join(ROOT, 'fixtures/repos/clean')], env },
      { label: 'popef config (MNIST)', args: [BIN, 'config', join(ROOT, 'fixtures/mnist/executable.popef')], env },
    ];
    const ms = interleaved(cases, 30);
    const base = ms[0] ?? NaN;
    cases.forEach((c, k) => {
      const m = ms[k] ?? NaN;
      console.log(`  ${c.label.padEnd(36)} ${fmt(m, 1)} ms  x${fmt(m / base)}${k === 1 ? ' (target <= 1.5)' : ''}`);
    });
  }

  console.log('\n[issue 8] popef dump of the 4 GiB file over HTTP (Range requests, local server)');
  {
    const fd = openSync(big, 'r');
    const server = await startServer(
      new Map([
        [
          '/big.popef',
          {
            size: fstatSync(fd).size,
            read: (start: number, end: number) => {
              const out = Buffer.alloc(end - start);
              readSync(fd, out, 0, out.length, start);
              return out;
            },
          },
        ],
      ]),
    );
    try {
      // Asynchronously: the server lives in this process's event loop.
      const child = spawn(process.execPath, [BIN, 'dump', '--json', `${server.base}/big.popef`], { stdio: ['ignore', 'ignore', 'inherit'] });
      const [status] = (await once(child, 'exit')) as [number | null];
      if (status !== 0) throw new Error(`dump over HTTP failed with status ${status}`);
      console.log(`  bytes served: ${server.bytesSent} (${fmt(server.bytesSent / 1024, 1)} KiB) in ${server.requests} requests (target < 1 MiB)`);
    } finally {
      await server.close();
      closeSync(fd);
    }
  }

  console.log('\n[issue 2] popef pack of a 1 GiB payload vs cp (median of 3)');
  const payload = join(dir, 'payload.bin');
  {
    const w = createWriteStream(payload);
    const block = new Uint8Array(4 * MiB).map((_, i) => (i * 40503) >>> 8);
    for (let i = 0; i < 256; i++) if (!w.write(block)) await once(w, 'drain');
    w.end();
    await once(w, 'finish');
  }
  await rm(big);
  await writeFile(
    join(dir, 'manifest.json'),
    JSON.stringify({ format: 'popef-open-manifest', version: 1, blobs: [{ type: 'POPLAR_EXECUTABLE', name: 'bench', file: 'payload.bin' }] }),
  );
  spawnSync('cat', [payload], { stdio: ['ignore', 'ignore', 'ignore'] }); // warm the page cache for both
  const cp = await measure('cp', [payload, join(dir, 'copy.bin')], 3);
  const pack = await measure(process.execPath, [BIN, 'pack', '--force', join(dir, 'manifest.json'), '-o', join(dir, 'packed.popef')], 3, true);
  start = process.hrtime.bigint();
  console.log(`  cp: ${fmt(cp.ms, 0)} ms (${fmt(1024 / (cp.ms / 1000), 0)} MiB/s)`);
  console.log(
    `  pack: ${fmt(pack.ms, 0)} ms (${fmt(1024 / (pack.ms / 1000), 0)} MiB/s) = ${fmt(cp.ms / pack.ms)} of cp's throughput (target >= 0.5), peak RSS ${fmt(pack.rssMiB, 1)} MiB (target < 150)`,
  );
} finally {
  await rm(dir, { recursive: true, force: true });
}
