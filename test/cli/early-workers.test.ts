// validate's early workers (src/cli/early-workers.ts): which command lines
// start them, that the list of value options matches the validate command,
// that a worker that died is never handed out, and that bin/popef.cjs with
// them gives the report an in-process run gives.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { readdirSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Worker } from 'node:worker_threads';
import { Command } from 'commander';
import { registerValidate } from '../../src/cli/commands/validate.js';
import { VALUE_OPTIONS, repositoriesOf, startEarlyWorkers } from '../../src/cli/early-workers.js';
import type { WorkerLaunchData } from '../../src/cli/validate-worker-launch.js';
import type { CliIo } from '../../src/cli/io.js';
import { PARALLEL_THRESHOLD } from '../../src/triton/repository/model-pool.js';
import { DEFER_UP_TO_MODELS } from '../../src/cli/optimizer-deferral.js';
import { ROOT, runCli } from '../helpers.js';

/** A stand-in worker: records unref, terminate and its workerData, and can be made to exit. */
class FakeWorker extends EventEmitter {
  unrefs = 0;
  data: WorkerLaunchData | undefined;
  terminated = false;
  unref(): void {
    this.unrefs += 1;
  }
  terminate(): Promise<number> {
    this.terminated = true;
    return Promise.resolve(0);
  }
}

let dir = '';
let big = '';
let small = '';
let huge = '';
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'popef-early-'));
  const make = async (name: string, count: number): Promise<string> => {
    const root = join(dir, name);
    for (let i = 0; i < count; i++) await mkdir(join(root, `m${i}`), { recursive: true });
    // Hidden entries are not counted as models.
    await mkdir(join(root, '.git'), { recursive: true });
    return root;
  };
  big = await make('big', PARALLEL_THRESHOLD);
  small = await make('small', PARALLEL_THRESHOLD - 1);
  huge = await make('huge', DEFER_UP_TO_MODELS + 1);
});
after(() => rm(dir, { recursive: true, force: true }));

function started(args: string[], context: Parameters<typeof startEarlyWorkers>[2] = {}): FakeWorker[] {
  const made: FakeWorker[] = [];
  startEarlyWorkers(args, 'worker.cjs', {
    cores: 2,
    execArgv: [],
    nodeOptions: '',
    ...context,
    newWorker: (_file, data) => {
      const w = new FakeWorker();
      w.data = data;
      made.push(w);
      return w as unknown as Worker;
    },
  });
  return made;
}

describe('early validate workers', () => {
  it("start with the pool's own rule, from the first repository, and never for --model or --help", () => {
    assert.equal(started([big]).length, 1, 'a repository the pool would split on 2 cores');
    assert.equal(started([small]).length, 0, 'below the pool threshold (the hidden entry does not count)');
    assert.equal(started([huge]).length, 0, 'past the deferral, TurboFan takes the second core');
    assert.equal(started([huge], { cores: 4 }).length, 3);
    assert.equal(started([big], { execArgv: ['--jitless'] }).length, 0, 'a user tiering flag: the pool needs 3 cores');
    assert.equal(started(['--format', 'json', big]).length, 1);
    assert.equal(started([big, '--model', 'm1']).length, 0);
    assert.equal(started([big, '--help']).length, 0);
    assert.equal(started([join(dir, 'missing')]).length, 0);
    assert.equal(started([small, big]).length, 0, 'the first repository decides');
    assert.equal(started([big], { cores: 1 }).length, 0);
    for (const w of started([big])) assert.equal(w.unrefs, 1, 'a worker not taken never holds the process');
    // What the worker compiles under, for its code cache (src/cli/validate-worker-launch.ts), and the cell through which
    // it turns TurboFan off itself once booted (src/cli/turbofan-handoff.ts).
    const [one] = started([big]);
    assert.equal(one?.data?.turbofanOff, true);
    assert.ok(one.data.turbofanHandoff instanceof Int32Array && one.data.turbofanHandoff.buffer instanceof SharedArrayBuffer);
    assert.deepEqual(Object.keys(one.data).sort(), ['turbofanHandoff', 'turbofanOff']);
    // Workers that compile with TurboFan on get no handoff: nothing is turned off.
    assert.deepEqual(
      started([huge], { cores: 4 }).map((w) => w.data),
      [{ turbofanOff: false }, { turbofanOff: false }, { turbofanOff: false }],
    );
    assert.deepEqual(
      started([big], { cores: 4, execArgv: ['--jitless'] }).map((w) => w.data),
      [{ turbofanOff: false }, { turbofanOff: false }, { turbofanOff: false }],
    );
  });

  it('reads the repositories past the value options', () => {
    assert.deepEqual(repositoriesOf(['--format', 'json', 'a', '--strict', '--triton-version', '24.10', 'b', '--', '-c']), ['a', 'b', '-c']);
  });

  it('knows every validate option that takes a value', () => {
    const program = new Command('popef');
    registerValidate(program, {} as CliIo, () => undefined);
    const validate = program.commands.find((c) => c.name() === 'validate');
    assert.ok(validate);
    const taking = validate.options.filter((o) => o.required || o.optional).map((o) => o.long ?? '');
    assert.deepEqual([...taking].sort(), [...VALUE_OPTIONS].sort());
  });

  it('give validate the handoff its workers share, and none when no worker started', () => {
    const workers = (cores: number, root: string, fail = false): ReturnType<typeof startEarlyWorkers> =>
      startEarlyWorkers([root], 'worker.cjs', {
        cores,
        execArgv: [],
        nodeOptions: '',
        newWorker: () => {
          if (fail) throw new Error('no thread');
          return new FakeWorker() as unknown as Worker;
        },
      });
    const seen: (Int32Array | undefined)[] = [];
    const early = startEarlyWorkers([big], 'worker.cjs', {
      cores: 4,
      execArgv: [],
      nodeOptions: '',
      newWorker: (_file, data) => {
        seen.push(data.turbofanHandoff);
        return new FakeWorker() as unknown as Worker;
      },
    });
    assert.equal(seen.length, 3);
    assert.ok(early.turbofanHandoff !== undefined && seen.every((h) => h === early.turbofanHandoff), 'one cell for every worker');
    assert.equal(Atomics.load(early.turbofanHandoff, 0), 0, 'no worker may change a flag while the bundle loads');
    early.bundleLoaded();
    assert.equal(Atomics.load(early.turbofanHandoff, 0), 1, 'now one may');
    assert.equal(workers(2, big, true).turbofanHandoff, undefined, 'no worker could start: the deferral turns TurboFan off itself');
    assert.equal(workers(2, small).turbofanHandoff, undefined);
    assert.equal(workers(4, huge).turbofanHandoff, undefined);
  });

  it('hands out no worker that exited, and ends the rest on dispose', () => {
    const made: FakeWorker[] = [];
    const early = startEarlyWorkers([huge], 'worker.cjs', {
      cores: 4,
      execArgv: [],
      nodeOptions: '',
      newWorker: () => {
        const w = new FakeWorker();
        made.push(w);
        return w as unknown as Worker;
      },
    });
    assert.equal(made.length, 3);
    made[0]?.emit('exit', 1);
    assert.equal(early.take(), made[1], 'the dead one is skipped');
    early.dispose();
    assert.equal(made[1]?.terminated, false, "a taken worker is the pool's");
    assert.equal(made[2]?.terminated, true);
    assert.equal(early.take(), undefined);
  });

  it('bin/popef.cjs validates a repository the early worker helps check, with the in-process report', async () => {
    // Models without config: each is a finding, so the report shows every model was checked, by whichever thread.
    for (let i = 0; i < PARALLEL_THRESHOLD; i++) await writeFile(join(big, `m${i}`, 'config.pbtxt'), `name: "m${i}"\nbackend: "onnxruntime"\n`);
    const cli = spawnSync(process.execPath, [join(ROOT, 'bin/popef.cjs'), 'validate', big, '--format', 'json'], { encoding: 'utf8' });
    const inProcess = await runCli(['validate', big, '--format', 'json']);
    assert.equal(cli.status, inProcess.code, cli.stderr);
    const strip = (text: string): unknown => {
      const report = JSON.parse(text) as { toolVersion?: string; durationMs?: number };
      delete report.durationMs;
      return report;
    };
    assert.deepEqual(strip(cli.stdout), strip(inProcess.stdout));
    assert.equal((JSON.parse(cli.stdout) as { summary: { models: number } }).summary.models, PARALLEL_THRESHOLD);
  });

  it(
    'the early worker writes its code cache after its first reply, and the next run takes it, with the same report',
    { skip: availableParallelism() < 2 },
    async () => {
      for (let i = 0; i < PARALLEL_THRESHOLD; i++) await writeFile(join(big, `m${i}`, 'config.pbtxt'), `name: "m${i}"\nbackend: "onnxruntime"\n`);
      const cache = join(dir, 'cache');
      const run = (): string => {
        const r = spawnSync(process.execPath, [join(ROOT, 'bin/popef.cjs'), 'validate', big, '--format', 'json'], {
          encoding: 'utf8',
          env: { PATH: process.env.PATH ?? '', XDG_CACHE_HOME: cache },
        });
        assert.equal(r.status, 1, r.stderr);
        return JSON.stringify({ ...(JSON.parse(r.stdout) as object), durationMs: undefined });
      };
      const workerCache = (): { name: string; ino: number; mtimeMs: number }[] =>
        readdirSync(join(cache, 'popef-toolkit'))
          .filter((f) => f.startsWith('validate-worker-'))
          .map((name) => {
            const { ino, mtimeMs } = statSync(join(cache, 'popef-toolkit', name));
            return { name, ino, mtimeMs };
          });
      // A cold first run may write none: when the worker compiles before the main thread has turned TurboFan off, the
      // flags differ by its first reply, and such a cache would be refused (src/cli/launch.ts). The next run writes it.
      let first = run();
      for (let i = 0; i < 3 && workerCache().length === 0; i++) first = run();
      const written = workerCache();
      assert.equal(written.length, 1, 'the worker replied, then wrote its cache');
      assert.equal(run(), first);
      // A rejected cache would have been written again, as a new file renamed over the old.
      assert.deepEqual(workerCache(), written, 'the second run took the cache and wrote none');
    },
  );

  it(
    'a worker the pool starts itself (no early one: the first repository is small) loads its code plainly, with the in-process report',
    {
      skip: availableParallelism() < 2,
    },
    async () => {
      for (let i = 0; i < PARALLEL_THRESHOLD; i++) await writeFile(join(big, `m${i}`, 'config.pbtxt'), `name: "m${i}"\nbackend: "onnxruntime"\n`);
      const cache = join(dir, 'cache-plain');
      // A preload runs in worker threads too (they inherit execArgv): it says so from each worker it runs in.
      const hook = join(dir, 'say-worker.cjs');
      await writeFile(hook, "if (!require('node:worker_threads').isMainThread) require('node:fs').writeSync(2, 'IN A WORKER\\n');");
      const cli = spawnSync(process.execPath, ['-r', hook, join(ROOT, 'bin/popef.cjs'), 'validate', small, big, '--format', 'json'], {
        encoding: 'utf8',
        env: { PATH: process.env.PATH ?? '', XDG_CACHE_HOME: cache },
      });
      assert.match(cli.stderr, /IN A WORKER/, 'the pool started a worker');
      const inProcess = await runCli(['validate', small, big, '--format', 'json']);
      assert.equal(cli.status, inProcess.code, cli.stderr);
      const strip = (text: string): string => JSON.stringify({ ...(JSON.parse(text) as object), durationMs: undefined });
      assert.equal(strip(cli.stdout), strip(inProcess.stdout));
      assert.deepEqual(
        readdirSync(join(cache, 'popef-toolkit')).filter((f) => f.startsWith('validate-worker-')),
        [],
        'no code cache for a worker whose flags its starter could not know',
      );
    },
  );
});
