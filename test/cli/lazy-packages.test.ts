// What a command loads is part of its start-up: the large packages only some
// commands need (@grpc/grpc-js, protobufjs, ajv, pngjs, prom-client) load
// from node_modules when used, never with the bundle (prom-client at serve's
// first metrics scrape: test/serve/metrics.test.ts). Each case runs the built
// CLI with a preload that lists, at exit, the packages in require's cache.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ROOT, fixture, tempDir } from '../helpers.js';

const LAZY = ['@grpc/grpc-js', 'protobufjs', 'ajv', 'pngjs', 'prom-client'];

describe('packages load when a command needs them', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let hook: string;
  before(async () => {
    ({ dir, cleanup } = await tempDir());
    hook = join(dir, 'list-packages.cjs');
    writeFileSync(
      hook,
      `process.on('exit', () => {
        const names = new Set();
        for (const file of Object.keys(require.cache)) {
          const m = /node_modules\\/((?:@[^/]+\\/)?[^/]+)\\//.exec(file);
          if (m) names.add(m[1]);
        }
        require('node:fs').writeSync(2, 'PACKAGES ' + JSON.stringify([...names].sort()) + '\\n');
        const builtins = process.moduleLoadList.filter((m) => m.startsWith('NativeModule ')).map((m) => m.slice('NativeModule '.length));
        require('node:fs').writeSync(2, 'BUILTINS ' + JSON.stringify(builtins) + '\\n');
      });`,
    );
  });
  after(() => cleanup());

  function run(args: string[]): string {
    const r = spawnSync(process.execPath, ['-r', hook, join(ROOT, 'bin/popef.cjs'), ...args], {
      cwd: dir,
      encoding: 'utf8',
      env: { ...process.env, NO_COLOR: '1' },
    });
    assert.ok(r.status === 0 || r.status === 1, `${args.join(' ')}: ${r.stderr}`);
    return r.stderr;
  }

  /** The list the hook printed after `prefix`. */
  function listed(stderr: string, prefix: string): string[] {
    const line = stderr.split('\n').find((l) => l.startsWith(prefix));
    assert.ok(line !== undefined, stderr);
    return JSON.parse(line.slice(prefix.length)) as string[];
  }

  function loaded(args: string[]): string[] {
    return listed(run(args), 'PACKAGES ').filter((name) => LAZY.includes(name));
  }

  /** Whether the command loaded Node's module `name` (crypto, fs/promises). */
  function loadsBuiltin(name: string, args: string[]): boolean {
    return listed(run(args), 'BUILTINS ').includes(name);
  }
  const loadsCrypto = (args: string[]): boolean => loadsBuiltin('crypto', args);

  it('dump, config, scaffold, validate and diff load none of them', () => {
    const mnist = fixture('mnist/executable.popef');
    assert.deepEqual(loaded(['dump', mnist]), []);
    assert.deepEqual(loaded(['config', mnist]), []);
    assert.deepEqual(loaded(['scaffold', mnist, '-r', join(dir, 'models'), '-m', 'mnist']), []);
    assert.deepEqual(loaded(['validate', join(dir, 'models')]), []);
    assert.deepEqual(loaded(['diff', fixture('diff/base.popef'), fixture('diff/identical.popef')]), []);
  });

  it('popef run loads pngjs for a PNG input, and nothing of the triton plugin for cpu', () => {
    const mnist = fixture('mnist/executable.popef');
    assert.deepEqual(loaded(['run', mnist, '--plugin', 'cpu', '--random']), []);
    assert.deepEqual(loaded(['run', mnist, '--plugin', 'cpu', '--input', `input=${fixture('mnist/img/3.png')}`]), ['pngjs']);
  });

  it('a schema check loads ajv (a name map that breaks the schema)', () => {
    const models = join(dir, 'broken');
    assert.deepEqual(loaded(['scaffold', fixture('mnist/executable.popef'), '-r', models, '-m', 'mnist']), []);
    writeFileSync(join(models, 'mnist/1/name_map.json'), '{"input": 7}');
    assert.deepEqual(loaded(['validate', models]), ['ajv']);
  });

  it('node:crypto loads only where something is hashed or a temporary file named: not for dump or validate', () => {
    // About 5 ms of a one-model validate's start (src/io/node-crypto.ts).
    const models = join(dir, 'crypto');
    assert.equal(loadsCrypto(['scaffold', fixture('mnist/executable.popef'), '-r', models, '-m', 'mnist']), true);
    assert.equal(loadsCrypto(['validate', models]), false);
    assert.equal(loadsCrypto(['validate', models, '--format', 'json']), false);
    assert.equal(loadsCrypto(['dump', fixture('mnist/executable.popef')]), false);
    assert.equal(loadsCrypto(['describe', fixture('mnist/executable.popef'), '-o', join(dir, 'mnist.popef.json')]), true);
  });

  it('node:fs/promises loads where a file is read or written asynchronously: not for validate', () => {
    // About 1.5 ms of validate's start on its main thread (src/io/local-file.ts).
    const models = join(dir, 'promises');
    assert.equal(loadsBuiltin('fs/promises', ['scaffold', fixture('mnist/executable.popef'), '-r', models, '-m', 'mnist']), true);
    assert.equal(loadsBuiltin('fs/promises', ['validate', models]), false);
    assert.equal(loadsBuiltin('fs/promises', ['validate', models, '--format', 'json']), false);
  });
});
