// What the published tarball holds: everything the CLI and the library load
// at run time, and nothing of the repository's own (sources, tests,
// fixtures other than the example's, source maps, the unbundled CLI); and a
// manifest without the scripts npm runs when it installs a tarball.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ROOT } from '../helpers.js';

describe('npm pack', () => {
  it('ships what runs and nothing else', () => {
    const r = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const files = new Set((JSON.parse(r.stdout) as { files: { path: string }[] }[])[0]?.files.map((f) => f.path) ?? []);
    for (const needed of [
      'LICENSE',
      'README.md',
      'package.json',
      'bin/popef.cjs',
      'bin/esm-only.cjs',
      'dist/bin.cjs',
      'dist/launch.cjs',
      // validate's worker threads, beside the bundle and beside the library's module that starts them.
      'dist/validate-worker.cjs',
      'dist/validate-worker-body.cjs',
      'dist/triton/repository/validate-worker.js',
      'dist/index.js',
      'dist/index.d.ts',
      'schemas/FORMAT.md',
      'schemas/popef.fbs',
      'schemas/model_config.proto',
      'schemas/grpc_service.proto',
      'schemas/dump.schema.json',
      'schemas/doctor.schema.json',
      'src/run/PROTOCOL.md',
      'src/run/bridge/ipu_bridge.py',
      'src/run/bridge/popef_bridge/__init__.py',
      'src/run/bridge/popef_bridge/frames.py',
      'src/run/bridge/popef_bridge/sdk.py',
      'src/run/bridge/popef_bridge/metadata.py',
      'src/run/bridge/popef_bridge/session.py',
      'src/run/bridge/popef_bridge/convert.py',
      'src/run/bridge/popef_bridge/errors.py',
      'src/run/bridge/SDK-API.md',
      // popef example mnist: the walkthrough's model, images and client.
      'fixtures/mnist/executable.popef',
      ...Array.from({ length: 10 }, (_, n) => `fixtures/mnist/img/${n}.png`),
      'src/examples/mnist/mnist_client.py',
      'src/examples/mnist/requirements.txt',
    ]) {
      assert.ok(files.has(needed), `${needed} is missing from the tarball`);
    }
    const unwanted = [...files].filter(
      (f) =>
        f.endsWith('.map') ||
        f.startsWith('dist/cli/') ||
        f.startsWith('test/') ||
        (f.startsWith('fixtures/') && !(f === 'fixtures/mnist/executable.popef' || /^fixtures\/mnist\/img\/\d\.png$/.test(f))) ||
        (f.startsWith('src/') && f.endsWith('.ts')) ||
        f.includes('__pycache__') ||
        f.startsWith('.'),
    );
    assert.deepEqual(unwanted, []);
  });

  it('has no install-time script: npm install of the tarball would list it as one it skipped', () => {
    const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts?: Record<string, string> };
    // npm 11 runs (or, without allowScripts, skips and lists) these for a dependency; prepare for a tarball or git one too.
    const installTime = ['preinstall', 'install', 'postinstall', 'prepare'].filter((s) => manifest.scripts?.[s] !== undefined);
    assert.deepEqual(installTime, []);
  });

  it('bundles a CLI whose only import() is the one the launcher stands in for', () => {
    // Inside the launcher's vm.Script, Node 20 gives import() no loader: a
    // run-time import must go through src/run/import-module.ts.
    const bundle = readFileSync(join(ROOT, 'dist/bin.cjs'), 'utf8');
    const calls = bundle.match(/(?<![\w$.])import\(/g) ?? [];
    assert.equal(calls.length, 1, 'an import() outside importModule() fails when the CLI runs from its code cache');
    assert.match(bundle, /typeof __popefImport/);
  });

  it('says that it is ES modules only when required', () => {
    const require = createRequire(import.meta.url);
    assert.throws(
      () => require('popef-toolkit'),
      (e: NodeJS.ErrnoException) => e.code === 'ERR_REQUIRE_ESM' && /ES module package .* await import\('popef-toolkit'\)/.test(e.message),
    );
  });
});
