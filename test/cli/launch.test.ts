// The launcher's code cache (src/cli/launch.ts, built into dist/launch.cjs):
// each case runs in a fresh Node process, because V8 keeps compiled scripts
// within one process and would hide what a cache did or did not hold.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { PARALLEL_THRESHOLD } from '../../src/triton/repository/pool-size.js';
import { ROOT, fixture, tempDir } from '../helpers.js';

const LAUNCH = join(ROOT, 'dist/launch.cjs');

interface Outcome {
  readonly cache: string;
  readonly detail: string;
  readonly value: unknown;
}

/** Launches `bundle` in a new process and reports what the launcher did and what the bundle computed. */
function launchIn(
  bundle: string,
  cacheDir: string,
  env: Record<string, string> = {},
  argv: string[] = ['dump'],
  status = 0,
  options: { cacheName?: string; saveAt?: 'caller'; save?: boolean } = {},
): Outcome {
  // As in the package, the launcher sits beside the bundle (package names resolve from there).
  const launcher = join(dirname(bundle), 'launch.cjs');
  copyFileSync(LAUNCH, launcher);
  const driver = `
    const { launch } = require(${JSON.stringify(launcher)});
    const { save, ...extra } = ${JSON.stringify(options)};
    const r = launch(${JSON.stringify(bundle)}, { cacheDir: ${JSON.stringify(cacheDir)}, argv: ${JSON.stringify(argv)}, env: process.env, ...extra });
    Promise.resolve(r.exports.value()).then((value) => {
      if (save) for (let i = 0; i < 2; i++) r.saveCache();
      console.log(JSON.stringify({ cache: r.cache, detail: r.detail, value }));
    });`;
  const r = spawnSync(process.execPath, ['-e', driver], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', HOME: cacheDir, ...env },
    timeout: 30_000,
  });
  assert.equal(r.status, status, r.stderr);
  return JSON.parse(r.stdout) as Outcome;
}

const cacheFiles = (dir: string): string[] => readdirSync(dir).filter((f) => f.endsWith('.bin'));

describe('the launcher keeps compiled code between runs', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  before(async () => ({ dir, cleanup } = await tempDir()));
  after(() => cleanup());

  let n = 0;
  /** A fresh bundle and cache directory for one case. */
  function setUp(source: string): { bundle: string; cache: string } {
    const root = join(dir, `case-${n++}`);
    mkdirSync(root);
    const bundle = join(root, 'bundle.cjs');
    writeFileSync(bundle, source);
    return { bundle, cache: join(root, 'cache') };
  }

  it('compiles, writes the cache at exit, and runs from it the next time with the same results', () => {
    const { bundle, cache } = setUp(
      `exports.value = () => require('node:path').basename(__filename) + ':' + (module.exports === exports) + ':' + [1, 2, 3].map((x) => x * 2).join(',');`,
    );
    const first = launchIn(bundle, cache);
    assert.deepEqual([first.cache, first.value], ['miss', 'bundle.cjs:true:2,4,6']);
    const [file] = cacheFiles(cache);
    assert.ok(file !== undefined && file.startsWith('dump-'), `cache files: ${cacheFiles(cache).join(', ')}`);
    assert.equal(statSync(join(cache, file)).mode & 0o777, 0o600);
    assert.equal(statSync(cache).mode & 0o777, 0o700);
    const second = launchIn(bundle, cache);
    assert.deepEqual([second.cache, second.value], ['hit', 'bundle.cjs:true:2,4,6']);
  });

  it('writes the cache when the caller says, under the name it gives, for a worker thread that has no exit to write at', () => {
    const { bundle, cache } = setUp(`exports.value = () => [3, 4].map((x) => x * x).join('+');`);
    const caller = { cacheName: 'validate-worker', saveAt: 'caller' as const };
    assert.equal(launchIn(bundle, cache, {}, ['dump'], 0, caller).cache, 'miss');
    assert.deepEqual(cacheFiles(cache), [], 'nothing at exit');
    assert.equal(launchIn(bundle, cache, {}, ['dump'], 0, { ...caller, save: true }).cache, 'miss');
    const files = cacheFiles(cache);
    assert.equal(files.length, 1);
    assert.ok(files[0]?.startsWith('validate-worker-'), files.join(', '));
    const again = launchIn(bundle, cache, {}, ['dump'], 0, { ...caller, save: true });
    assert.deepEqual([again.cache, again.value], ['hit', '9+16']);
    assert.deepEqual(cacheFiles(cache), files, 'a hit writes nothing');
    // A name that could leave the directory is not used: the command line names the file.
    launchIn(bundle, cache, {}, ['dump'], 0, { cacheName: '../x' });
    assert.ok(
      cacheFiles(cache).some((f) => f.startsWith('dump-')),
      cacheFiles(cache).join(', '),
    );
  });

  it('writes no cache made after V8’s flags changed, which the next run, compiling as this one did, would refuse', () => {
    // As validate's worker: compiled with TurboFan off, and TurboFan back on (a larger second repository) by its first reply.
    const { bundle, cache } = setUp(
      `exports.value = () => { const v8 = require('node:v8'); v8.setFlagsFromString(process.env.FLIP === '1' ? '--no-turbofan' : '--turbofan'); return 1; };`,
    );
    const caller = { cacheName: 'validate-worker', saveAt: 'caller' as const, save: true };
    assert.equal(launchIn(bundle, cache, { FLIP: '1' }, ['dump'], 0, caller).cache, 'miss');
    assert.deepEqual(cacheFiles(cache), [], 'the flags changed between compile and save');
    assert.equal(launchIn(bundle, cache, {}, ['dump'], 0, caller).cache, 'miss');
    assert.equal(cacheFiles(cache).length, 1, 'the flags at save are those at compile');
    assert.equal(launchIn(bundle, cache, {}, ['dump'], 0, caller).cache, 'hit');
  });

  it(
    'runs without a cache, at once, when its directory is under /proc (where Node’s recursive mkdir never returns)',
    { skip: !existsSync('/proc/self') },
    () => {
      const { bundle } = setUp(`exports.value = () => 'ran';`);
      const r = launchIn(bundle, join('/proc', `popef-${process.pid}`, 'cache'));
      assert.deepEqual([r.cache, r.value], ['off', 'ran']);
      assert.match(r.detail, /ENOENT/);
    },
  );

  it('never runs the cache of other code of the same length (V8 checks only the length)', () => {
    const { bundle, cache } = setUp(`exports.value = () => 'first';`);
    assert.equal(launchIn(bundle, cache).cache, 'miss');
    writeFileSync(bundle, `exports.value = () => 'other';`);
    const changed = launchIn(bundle, cache);
    assert.deepEqual([changed.cache, changed.value], ['miss', 'other']);
  });

  it('compiles normally when the cache file is damaged, and writes a good one', () => {
    const { bundle, cache } = setUp(`exports.value = () => 40 + 2;`);
    launchIn(bundle, cache);
    const [file] = cacheFiles(cache);
    assert.ok(file !== undefined);
    writeFileSync(join(cache, file), Buffer.alloc(statSync(join(cache, file)).size, 0x5a), { mode: 0o600 });
    const damaged = launchIn(bundle, cache);
    assert.deepEqual([damaged.cache, damaged.value], ['rejected', 42]);
    assert.equal(launchIn(bundle, cache).cache, 'hit');
  });

  it('keeps one cache per command and output format, since each holds what its own run compiled', () => {
    const { bundle, cache } = setUp(`exports.value = () => 1;`);
    launchIn(bundle, cache, {}, ['dump', 'x.popef']);
    launchIn(bundle, cache, {}, ['dump', '--json', 'x.popef']);
    launchIn(bundle, cache, {}, ['dump', 'x.popef', '--format', 'json']);
    launchIn(bundle, cache, {}, ['--no-color', 'validate', 'models']);
    launchIn(bundle, cache, {}, ['validate', 'models', '--format', 'sarif']);
    launchIn(bundle, cache, {}, ['validate', 'models', '--format', '../../x']);
    launchIn(bundle, cache, {}, ['--help']);
    launchIn(bundle, cache, {}, ['../a path/with spaces']);
    assert.deepEqual(
      cacheFiles(cache)
        .map((f) => f.split('-')[0])
        .sort(),
      ['dump', 'dump.json', 'other', 'validate', 'validate.sarif'],
    );
    assert.equal(launchIn(bundle, cache, {}, ['validate']).cache, 'hit');
    assert.equal(launchIn(bundle, cache, {}, ['dump', '--markdown']).cache, 'miss');
  });

  it('writes no cache after a failed run (exit 2 or more), whose error path is not what the command usually runs', () => {
    const { bundle, cache } = setUp(`exports.value = () => { process.exitCode = Number(process.env.CODE); return 'ran'; };`);
    assert.equal(launchIn(bundle, cache, { CODE: '2' }, ['dump'], 2).cache, 'miss');
    assert.equal(launchIn(bundle, cache, { CODE: '2' }, ['dump'], 2).cache, 'miss');
    assert.deepEqual(cacheFiles(cache), []);
    assert.equal(launchIn(bundle, cache, { CODE: '1' }, ['validate'], 1).cache, 'miss', 'exit 1 (findings) is a normal run');
    assert.equal(launchIn(bundle, cache, { CODE: '1' }, ['validate'], 1).cache, 'hit');
  });

  it('uses no cache that someone else could have written', () => {
    const { bundle, cache } = setUp(`exports.value = () => 'safe';`);
    mkdirSync(cache, { mode: 0o700 });
    chmodSync(cache, 0o777);
    const open = launchIn(bundle, cache);
    assert.deepEqual([open.cache, open.value], ['off', 'safe']);
    assert.match(open.detail, /writable by others/);
    assert.deepEqual(cacheFiles(cache), []);

    chmodSync(cache, 0o700);
    launchIn(bundle, cache);
    const [file] = cacheFiles(cache);
    assert.ok(file !== undefined);
    chmodSync(join(cache, file), 0o666);
    assert.equal(launchIn(bundle, cache).cache, 'miss', 'a world-writable cache file is not read');
    if (process.getuid?.() === 0) {
      chmodSync(join(cache, file), 0o600);
      chownSync(join(cache, file), 65534, 65534);
      assert.equal(launchIn(bundle, cache).cache, 'miss', "another user's cache file is not read");
      chownSync(cache, 65534, 65534);
      assert.match(launchIn(bundle, cache).detail, /belongs to another user/);
    }
  });

  it('runs without a cache when it is turned off or cannot be written', () => {
    const { bundle, cache } = setUp(`exports.value = () => 'plain';`);
    for (const env of [{ POPEF_NO_COMPILE_CACHE: '1' }, { NODE_DISABLE_COMPILE_CACHE: '1' }] as Record<string, string>[]) {
      const off = launchIn(bundle, cache, env);
      assert.deepEqual([off.cache, off.value, off.detail], ['off', 'plain', 'disabled by the environment']);
    }
    writeFileSync(cache, 'a file where the directory should be');
    const blocked = launchIn(bundle, cache);
    assert.deepEqual([blocked.cache, blocked.value], ['off', 'plain']);
    const readOnly = join(dirname(cache), 'read-only');
    mkdirSync(readOnly, { mode: 0o500 });
    if (process.getuid?.() !== 0) assert.equal(launchIn(bundle, join(readOnly, 'cache')).cache, 'off');
  });

  it('lets the bundle import() packages beside it, as a module would', () => {
    const { bundle, cache } = setUp(
      `exports.value = () => (typeof __popefImport === 'function' ? __popefImport : (s) => import(s))('side-package').then((m) => m.default);`,
    );
    const pkg = join(dirname(bundle), 'node_modules/side-package');
    mkdirSync(pkg, { recursive: true });
    writeFileSync(join(pkg, 'package.json'), JSON.stringify({ name: 'side-package', type: 'module', exports: './index.js' }));
    writeFileSync(join(pkg, 'index.js'), `export default 'imported';`);
    assert.equal(launchIn(bundle, cache).value, 'imported');
    const hit = launchIn(bundle, cache);
    assert.deepEqual([hit.cache, hit.value], ['hit', 'imported']);
  });

  it('keeps at most 32 cache files, dropping the oldest, and removes what a killed write left', () => {
    const { bundle, cache } = setUp(`exports.value = () => 0;`);
    mkdirSync(cache, { mode: 0o700 });
    for (let i = 0; i < 40; i++) {
      const old = join(cache, `old${i}-00000000-1-v8-x.bin`);
      writeFileSync(old, 'x', { mode: 0o600 });
      utimesSync(old, 1000 + i, 1000 + i);
    }
    // What a run killed while writing its cache leaves, and what a run writing now has.
    const killed = join(cache, 'dump-x.bin.123-abc.tmp');
    const writing = join(cache, 'dump-x.bin.456-def.tmp');
    writeFileSync(killed, 'x');
    utimesSync(killed, 1000, 1000);
    writeFileSync(writing, 'x');
    launchIn(bundle, cache);
    assert.deepEqual(
      readdirSync(cache).filter((f) => f.endsWith('.tmp')),
      ['dump-x.bin.456-def.tmp'],
    );
    const left = cacheFiles(cache);
    assert.equal(left.length, 32);
    assert.ok(
      left.some((f) => f.startsWith('dump-')),
      'the new cache is kept',
    );
    assert.ok(!left.includes('old0-00000000-1-v8-x.bin') && left.includes('old39-00000000-1-v8-x.bin'));
  });

  it('gives the built CLI the same output with and without its cache', () => {
    const { cache } = setUp('');
    const run = (): string => {
      const r = spawnSync(process.execPath, [join(ROOT, 'bin/popef.cjs'), 'dump', '--all', fixture('mnist/executable.popef')], {
        encoding: 'utf8',
        env: { PATH: process.env.PATH ?? '', XDG_CACHE_HOME: cache, NO_COLOR: '1' },
      });
      assert.equal(r.status, 0, r.stderr);
      return r.stdout;
    };
    const cold = run();
    assert.equal(cacheFiles(join(cache, 'popef-toolkit')).length, 1);
    assert.equal(run(), cold);
    assert.match(cold, /Inputs \(User-provided\)/);
  });

  it("takes both caches a validate run of a repository its early worker helps check wrote: the worker's and the CLI's", () => {
    // The early worker turns TurboFan off itself once booted (src/cli/turbofan-handoff.ts) and writes its cache after
    // its first reply; the CLI restores the flags before it writes its own at exit. Neither may be refused the next time.
    const { cache } = setUp('');
    const repo = join(dirname(cache), 'repo');
    const source = fixture('repos/clean/mnist');
    const config = readFileSync(join(source, 'config.pbtxt'), 'utf8');
    for (let i = 0; i < PARALLEL_THRESHOLD; i++) {
      const model = join(repo, `m${i}`);
      mkdirSync(join(model, '1'), { recursive: true });
      writeFileSync(join(model, 'config.pbtxt'), config.replace('name: "mnist"', `name: "m${i}"`));
      for (const f of ['executable.popef', 'name_map.json']) copyFileSync(join(source, '1', f), join(model, '1', f));
    }
    const run = (): void => {
      const r = spawnSync(process.execPath, [join(ROOT, 'bin/popef.cjs'), 'validate', repo, '--format', 'json'], {
        encoding: 'utf8',
        env: { PATH: process.env.PATH ?? '', XDG_CACHE_HOME: cache },
      });
      assert.equal(r.status, 0, r.stdout + r.stderr);
    };
    run();
    const dir = join(cache, 'popef-toolkit');
    const written = cacheFiles(dir).sort();
    // With one core, validate starts no worker (pool-size.ts): then only the CLI's cache is there.
    const expected = availableParallelism() >= 2 ? ['validate-worker', 'validate.json'] : ['validate.json'];
    assert.deepEqual(
      written.map((f) => f.replace(/-[0-9a-f]{8}-.*$/, '')),
      expected,
    );
    const inodes = written.map((f) => statSync(join(dir, f)).ino);
    run();
    assert.deepEqual(cacheFiles(dir).sort(), written);
    assert.deepEqual(
      written.map((f) => statSync(join(dir, f)).ino),
      inodes,
      'the second run took both caches and wrote neither',
    );
  });

  it('takes the cache a validate run wrote, though validate turns TurboFan off while it checks', () => {
    // The cache carries the V8 flags of the run that wrote it; validate restores them before the launcher writes at exit.
    const { cache } = setUp('');
    const run = (): void => {
      const r = spawnSync(process.execPath, [join(ROOT, 'bin/popef.cjs'), 'validate', fixture('repos/clean')], {
        encoding: 'utf8',
        env: { PATH: process.env.PATH ?? '', XDG_CACHE_HOME: cache, NO_COLOR: '1' },
      });
      assert.equal(r.status, 0, r.stdout + r.stderr);
    };
    run();
    const [written] = cacheFiles(join(cache, 'popef-toolkit'));
    assert.ok(written !== undefined, 'the first run wrote a cache');
    const first = statSync(join(cache, 'popef-toolkit', written));
    run();
    // A rejected cache is written again, as a new file renamed over the old.
    assert.deepEqual(cacheFiles(join(cache, 'popef-toolkit')), [written]);
    assert.equal(statSync(join(cache, 'popef-toolkit', written)).ino, first.ino, 'the second run took the cache and wrote none');
  });
});
