/**
 * popef validate against the real tritonserver, on repositories of 1,000
 * and 5,000 copies of the scaffolded MNIST model (config.pbtxt,
 * name_map.json and the PopEF each), then popef validate alone on 100,000
 * copies. Prints figures
 * only. Run after npm run build:
 *   npx tsx test/bench/validate.ts
 *
 * - validate: wall time of `popef validate REPO --format json` in a child
 *   process (start-up included, measured from outside it by child-usage.py),
 *   with its peak RSS and its CPU time (user +
 *   system, all threads): on a machine shared with other work, CPU time
 *   is the fairer figure.
 * - tritonserver: the server that nvidia-pytriton bundles in .venv, with the
 *   stand-in poplar backend of the oracle tests (test/triton/oracle/), so
 *   every load-time check of Triton's core runs: wall time from the spawn
 *   to the arrival of the line saying its HTTP service started, which it
 *   does once the initial load of every model has ended (the free ports are
 *   found before, and the log's poll is not waited for); the repository
 *   index is then asked that all are READY.
 *   Its CPU time is read from /proc when startTriton returns, within a
 *   poll (5 ms) of the line (Linux only).
 *
 * The two run alternately, ROUNDS times each, so that the load of the
 * machine (other work on the same cores) falls on both alike; the figures
 * are ranges and medians, with the load average before and after.
 * BENCH_VALIDATE_LARGE=0 skips the 100,000-model part (about 2 GB of
 * directories is avoided by hard-linking the PopEF and the name map).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { copyFile, link, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildStandInBackends, findTritonServer, startTriton } from '../triton/oracle/tritonserver.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ROUNDS = 5;
/** The interpreter that runs child-usage.py (any Python 3.9 or later). */
const PYTHON = process.env.POPEF_PYTHON ?? 'python3';
/**
 * Repository sizes run side by side with tritonserver. Both have a fixed
 * cost and a cost per model: popef validate's start is about 45 ms (Node's
 * own 30, without NODE_EXTRA_CA_CERTS), then its code runs in V8's
 * interpreter and baseline compiler (validate defers the optimizing one for
 * its first models: src/cli/optimizer-deferral.ts); tritonserver is READY
 * on one model in about 25 ms and loads models on several threads. Two
 * sizes show both sides of that.
 */
const SIDE_BY_SIDE = [1000, 5000];
const LARGE = 100_000;
const TARGET_LARGE_MS = 15_000;
const TARGET_LARGE_BYTES = 1024 ** 3;

function load(): string {
  return loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
}

function stats(values: readonly number[]): { min: number; median: number; max: number } {
  const sorted = [...values].sort((a, b) => a - b);
  return { min: sorted[0] ?? NaN, median: sorted[Math.floor(sorted.length / 2)] ?? NaN, max: sorted[sorted.length - 1] ?? NaN };
}

const ms = (n: number): string => `${n.toFixed(0)} ms`;

/** Hard links per source file: ext4 allows 65,000. */
const LINKS_PER_SOURCE = 50_000;

/** A repository of `count` copies of the template model; the large files hard-linked, the config written per model (its name differs). */
async function makeRepository(template: string, repo: string, count: number): Promise<void> {
  const config = await readFile(join(template, 'mnist/config.pbtxt'), 'utf8');
  const sources = join(repo, '..', `${basename(repo)}-sources`);
  for (let i = 0; i < count; i++) {
    const from = join(sources, String(Math.floor(i / LINKS_PER_SOURCE)));
    if (i % LINKS_PER_SOURCE === 0) {
      await mkdir(from, { recursive: true });
      for (const f of ['name_map.json', 'executable.popef']) await copyFile(join(template, 'mnist/1', f), join(from, f));
    }
    const model = `model_${String(i).padStart(6, '0')}`;
    await mkdir(join(repo, model, '1'), { recursive: true });
    await writeFile(join(repo, model, 'config.pbtxt'), config.replace('name: "mnist"', `name: "${model}"`));
    for (const f of ['name_map.json', 'executable.popef']) await link(join(from, f), join(repo, model, '1', f));
  }
}

/** USER_HZ: the unit of utime and stime in /proc/PID/stat (100 on Linux for every architecture Node runs on). */
const TICKS_PER_SECOND = 100;

/** CPU time (user + system, all threads) a live process has used, in ms; NaN where /proc cannot say. */
function processCpuMs(pid: number): number {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may hold spaces: fields are counted after the last ')'.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND) * 1000;
  } catch {
    return NaN;
  }
}

/**
 * validate's environment: this one without NODE_EXTRA_CA_CERTS. Node 20
 * reads and parses that certificate bundle as it starts, before any of
 * popef's code runs, whether or not the process makes a TLS connection
 * (validate makes none); where it is set (this project's machines set it for
 * their network proxy) it adds tens of milliseconds to every start, which
 * the line startCost() prints shows.
 */
const { NODE_EXTRA_CA_CERTS: extraCaCerts, ...VALIDATE_ENV } = process.env;

/** Median wall time (ms) of `node -e 0` in `env`, over 9 starts. */
function nodeStartMs(env: NodeJS.ProcessEnv): number {
  const times: number[] = [];
  for (let i = 0; i < 9; i++) {
    const start = process.hrtime.bigint();
    spawnSync(process.execPath, ['-e', '0'], { env });
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  return stats(times).median;
}

/** What NODE_EXTRA_CA_CERTS costs Node's start here, when it is set. */
function startCost(): string {
  if (extraCaCerts === undefined) return 'NODE_EXTRA_CA_CERTS is not set here';
  return `Node's start: ${ms(nodeStartMs(VALIDATE_ENV))} (validate's runs, without NODE_EXTRA_CA_CERTS), ${ms(nodeStartMs(process.env))} with NODE_EXTRA_CA_CERTS=${extraCaCerts} as this environment sets it`;
}

/**
 * One popef validate run: wall time, peak RSS (KiB) and CPU time (ms), read
 * by child-usage.py from outside the process, as a user runs it: a preload
 * (max-rss.mjs) would cost it, and each of its worker threads, an ES module
 * loader.
 */
async function runValidate(repo: string, usageFile: string, models: number): Promise<{ ms: number; rssKiB: number; cpuMs: number }> {
  await rm(usageFile, { force: true });
  const r = spawnSync(
    PYTHON,
    [join(ROOT, 'test/bench/child-usage.py'), usageFile, process.execPath, join(ROOT, 'bin/popef.cjs'), 'validate', repo, '--format', 'json'],
    { env: VALIDATE_ENV, maxBuffer: 1024 ** 3 },
  );
  if (r.status !== 0) throw new Error(`validate found problems (exit ${r.status}): ${r.stdout.toString().slice(0, 500)}${r.stderr.toString()}`);
  const report = JSON.parse(r.stdout.toString()) as { summary: { models: number } };
  if (report.summary.models !== models) throw new Error(`validate reported ${report.summary.models} models, not ${models}`);
  const usage = JSON.parse(await readFile(usageFile, 'utf8')) as { ms: number; maxRssKiB: number; cpuMs: number };
  return { ms: usage.ms, rssKiB: usage.maxRssKiB, cpuMs: usage.cpuMs };
}

/** One tritonserver start: wall time until every model's load has ended, checked READY, and its CPU time then (ms). */
async function runTriton(binary: string, repo: string, backends: string, models: number): Promise<{ ms: number; cpuMs: number }> {
  const triton = await startTriton(binary, repo, backends, 600_000, [], 5);
  // From the spawn to the ready line's arrival: the ports chosen before and the poll's delay after are not the server's.
  const elapsed = triton.readyAfterMs;
  const cpuMs = processCpuMs(triton.pid);
  try {
    const index = (await (await triton.ask('/v2/repository/index', { method: 'POST', body: '{}' })).json()) as { state?: string }[];
    const ready = index.filter((m) => m.state === 'READY').length;
    if (ready !== models) throw new Error(`tritonserver has ${ready} of ${models} models READY`);
  } finally {
    await triton.stop();
  }
  return { ms: elapsed, cpuMs };
}

const dir = await mkdtemp(join(tmpdir(), 'popef-bench-validate-'));
try {
  const template = join(dir, 'template');
  const s = spawnSync(process.execPath, [
    join(ROOT, 'bin/popef.cjs'),
    'scaffold',
    join(ROOT, 'fixtures/mnist/executable.popef'),
    '-r',
    template,
    '-m',
    'mnist',
    '--name',
    'input=digit_image',
    '--name',
    'softmax/Softmax:0=output_labels',
  ]);
  if (s.status !== 0) throw new Error(s.stderr.toString());
  const usageFile = join(dir, 'usage.json');
  const triton = findTritonServer();
  const backends = join(dir, 'backends');
  if (triton !== undefined) await buildStandInBackends(backends, ['poplar']);
  console.log(startCost());
  for (const size of SIDE_BY_SIDE) {
    const repo = join(dir, `repo-${size}`);
    await makeRepository(template, repo, size);
    const before = load();
    const ours: number[] = [];
    const oursRss: number[] = [];
    const oursCpu: number[] = [];
    const theirs: number[] = [];
    const theirsCpu: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const v = await runValidate(repo, usageFile, size);
      ours.push(v.ms);
      oursRss.push(v.rssKiB);
      oursCpu.push(v.cpuMs);
      if (triton !== undefined) {
        const t = await runTriton(triton, repo, backends, size);
        theirs.push(t.ms);
        theirsCpu.push(t.cpuMs);
      }
    }
    const o = stats(ours);
    const oc = stats(oursCpu);
    console.log(`${size.toLocaleString('en')} models, ${ROUNDS} alternating rounds, load average ${before} before, ${load()} after:`);
    console.log(
      `  popef validate:          ${ms(o.min)} - ${ms(o.max)} (median ${ms(o.median)}), peak RSS ${(Math.max(...oursRss) / 1024).toFixed(0)} MiB, CPU ${ms(oc.min)} - ${ms(oc.max)} (median ${ms(oc.median)})`,
    );
    if (triton === undefined) {
      console.log('  tritonserver:            not run (no .venv with nvidia-pytriton; bash .ci/run installs it)');
    } else {
      const t = stats(theirs);
      const tc = stats(theirsCpu);
      console.log(
        `  tritonserver to READY:   ${ms(t.min)} - ${ms(t.max)} (median ${ms(t.median)}), CPU at READY ${ms(tc.min)} - ${ms(tc.max)} (median ${ms(tc.median)})`,
      );
      const ratios = ours.map((v, i) => v / (theirs[i] ?? NaN));
      const r = stats(ratios);
      console.log(
        `  validate / tritonserver: ${r.median.toFixed(2)} median of the rounds' ratios (${r.min.toFixed(2)} - ${r.max.toFixed(2)}; target <= 1)`,
      );
    }
    await rm(repo, { recursive: true, force: true });
  }

  if (process.env.BENCH_VALIDATE_LARGE !== '0') {
    const large = join(dir, 'large');
    await makeRepository(template, large, LARGE);
    const beforeLarge = load();
    const runs = [await runValidate(large, usageFile, LARGE), await runValidate(large, usageFile, LARGE)];
    const times = runs.map((r) => r.ms);
    const cpu = runs.map((r) => r.cpuMs);
    const peak = Math.max(...runs.map((r) => r.rssKiB)) * 1024;
    console.log(`100,000 models, 2 runs, load average ${beforeLarge} before, ${load()} after:`);
    console.log(
      `  popef validate:          ${ms(Math.min(...times))} - ${ms(Math.max(...times))} (target < ${ms(TARGET_LARGE_MS)}), peak RSS ${(peak / 1024 ** 2).toFixed(0)} MiB (target < ${(TARGET_LARGE_BYTES / 1024 ** 2).toFixed(0)} MiB), CPU ${ms(Math.min(...cpu))} - ${ms(Math.max(...cpu))}`,
    );
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
