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
      });`,
    );
  });
  after(() => cleanup());

  function loaded(args: string[]): string[] {
    const r = spawnSync(process.execPath, ['-r', hook, join(ROOT, 'bin/popef.cjs'), ...args], {
      cwd: dir,
      encoding: 'utf8',
      env: { ...process.env, NO_COLOR: '1' },
    });
    assert.ok(r.status === 0 || r.status === 1, `${args.join(' ')}: ${r.stderr}`);
    const line = r.stderr.split('\n').find((l) => l.startsWith('PACKAGES '));
    assert.ok(line !== undefined, r.stderr);
    return (JSON.parse(line.slice('PACKAGES '.length)) as string[]).filter((name) => LAZY.includes(name));
  }

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
});
