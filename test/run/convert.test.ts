import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ModelSet } from '../../src/index.js';
import { ROOT, fixture, fixtureManifest, inTempDir, runCli } from '../helpers.js';

// import/export run through the IPU bridge against the simulated SDK
// (fixtures/sim-sdk), whose popef.Writer stores its own private encoding:
// so a file it writes is, to this tool, an SDK-written file.
const SIM = { ...process.env, PYTHONPATH: fixture('sim-sdk') } as Record<string, string>;
const NO_SDK = { ...process.env, PYTHONPATH: '' } as Record<string, string>;

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Where things sit differs between two files of the same content: drop it, and sort blobs. */
function normalised(value: Json): Json {
  if (Array.isArray(value)) return value.map(normalised);
  if (value === null || typeof value !== 'object') return value;
  const out: { [key: string]: Json } = {};
  for (const [k, v] of Object.entries(value)) {
    if (['path', 'file', 'offset', 'payloadOffset', 'size', 'totalBytes', 'files'].includes(k)) continue;
    out[k] = normalised(v);
  }
  // The SDK's writer may order blobs its own way: compare them as a set.
  if (Array.isArray(out.blobs)) {
    out.blobs = out.blobs
      .map((b) =>
        b !== null && typeof b === 'object' && !Array.isArray(b) ? Object.fromEntries(Object.entries(b).filter(([k]) => k !== 'index')) : b,
      )
      .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
  }
  return out;
}

async function dumpJson(files: string[]): Promise<Json> {
  const r = await runCli(['dump', ...files, '--json']);
  assert.equal(r.code, 0, r.stderr);
  return normalised(JSON.parse(r.stdout) as Json);
}

/** Every payload byte of a set, by blob kind and name. */
async function payloads(files: string[]): Promise<Map<string, Buffer>> {
  const set = await ModelSet.open(files);
  const out = new Map<string, Buffer>();
  try {
    for (const b of set.blobs) {
      if (b.kind === 'metadata' || b.kind === 'unknown') continue;
      const parts: Uint8Array[] = [];
      for await (const c of set.fileOf(b).payloadChunks(b)) parts.push(c);
      out.set(`${b.kind} ${b.name}`, Buffer.concat(parts));
    }
  } finally {
    await set.close();
  }
  return out;
}

describe('popef export / import (simulated SDK)', () => {
  it('import(export(x)) gives back x, for every valid fixture', async () => {
    const fixtures = (await fixtureManifest()).filter((f) => f.expect.ok && f.expect.warnings === undefined && !f.path.startsWith('split/'));
    assert.ok(fixtures.length >= 10);
    await inTempDir(async (dir) => {
      for (const f of fixtures) {
        const source = fixture(f.path);
        const sdkFile = join(dir, `${f.path.replace(/\W/g, '_')}.sdk`);
        const back = join(dir, `${f.path.replace(/\W/g, '_')}.popef`);
        const compressed = f.path.startsWith('compressed/');
        const e = await runCli(['export', source, '-o', sdkFile], { env: SIM });
        assert.equal(e.code, 0, `${f.path}: ${e.stderr}`);
        // The exported file is in the SDK's encoding, not ours.
        assert.equal((await readFile(sdkFile)).subarray(0, 15).toString(), 'SIMULATED-POPEF', f.path);
        const i = await runCli(['import', sdkFile, '-o', back, ...(compressed ? ['--compress'] : [])], { env: SIM });
        assert.equal(i.code, 0, `${f.path}: ${i.stderr}`);
        assert.match(i.stdout, /in the PopEF open layout\n$/);
        assert.deepEqual(await dumpJson([back]), await dumpJson([source]), f.path);
        assert.deepEqual(await payloads([back]), await payloads([source]), f.path);
        const d = await runCli(['diff', source, back]);
        assert.equal(d.code, 0, `${f.path}: ${d.stdout}`);
      }
    });
  });

  it('exports a model set of several files into one SDK file, and imports several SDK files as one set', async () => {
    await inTempDir(async (dir) => {
      const split = [fixture('split/executable.popef'), fixture('split/variables.popef')];
      assert.equal((await runCli(['export', ...split, '-o', join(dir, 'one.sdk')], { env: SIM })).code, 0);
      const i = await runCli(['import', join(dir, 'one.sdk'), '-o', join(dir, 'one.popef')], { env: SIM });
      assert.equal(i.code, 0, i.stderr);
      assert.match(i.stdout, /3 blob\(s\)/);
      assert.deepEqual(await payloads([join(dir, 'one.popef')]), await payloads(split));
      assert.deepEqual(await dumpJson([join(dir, 'one.popef')]), await dumpJson(split));
      // And the other way: several SDK files imported as one model set.
      assert.equal((await runCli(['export', split[0] ?? '', '-o', join(dir, 'e.sdk')], { env: SIM })).code, 0);
      assert.equal((await runCli(['export', split[1] ?? '', '-o', join(dir, 'v.sdk')], { env: SIM })).code, 0);
      const both = await runCli(['import', join(dir, 'e.sdk'), join(dir, 'v.sdk'), '-o', join(dir, 'both.popef')], { env: SIM });
      assert.equal(both.code, 0, both.stderr);
      assert.deepEqual(await payloads([join(dir, 'both.popef')]), await payloads(split));
      assert.deepEqual(await dumpJson([join(dir, 'both.popef')]), await dumpJson(split));
    });
  });

  it('stores executables compressed with --compress, and the payload survives', async () => {
    await inTempDir(async (dir) => {
      const source = fixture('mnist/executable.popef');
      assert.equal((await runCli(['export', source, '-o', join(dir, 'm.sdk')], { env: SIM })).code, 0);
      assert.equal((await runCli(['import', join(dir, 'm.sdk'), '-o', join(dir, 'z.popef'), '--compress'], { env: SIM })).code, 0);
      const report = JSON.parse((await runCli(['dump', join(dir, 'z.popef'), '--json'])).stdout) as { models: { compressed: boolean }[] };
      assert.equal(report.models[0]?.compressed, true);
      assert.deepEqual(await payloads([join(dir, 'z.popef')]), await payloads([source]));
    });
  });

  it('exits 2 naming what is missing when the SDK cannot be imported, and writes nothing', async () => {
    await inTempDir(async (dir) => {
      for (const kind of ['import', 'export']) {
        const r = await runCli([kind, fixture('mnist/executable.popef'), '-o', join(dir, 'out')], { env: NO_SDK });
        assert.equal(r.code, 2);
        assert.match(
          r.stderr,
          /the SDK bridge cannot run here: the Poplar SDK's Python modules cannot be imported: popef \(No module named 'popef'\)/,
        );
        assert.match(r.stderr, /hint: enable the Poplar SDK/);
      }
      assert.deepEqual(await readdir(dir), []);
    });
  });

  it('refuses a --timeout that is not a positive number', async () => {
    const r = await runCli(['import', fixture('mnist/executable.popef'), '-o', '/nonexistent/x', '--timeout', 'soon'], { env: SIM });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--timeout "soon" is not a positive number of seconds/);
  });

  it('names a missing input or destination directory before starting the bridge', async () => {
    const i = await runCli(['import', 'no/such.popef', '-o', '/tmp/never.popef'], { env: SIM });
    assert.equal(i.code, 2);
    assert.match(i.stderr, /no\/such\.popef: cannot open the file: ENOENT \[E_IO\]\n {2}hint: check the path/);
    const e = await runCli(['export', fixture('seed/executable.popef'), '-o', '/nonexistent/dir/x.popef'], { env: SIM });
    assert.equal(e.code, 2);
    assert.match(e.stderr, /\/nonexistent\/dir: cannot find the destination directory: ENOENT \[E_IO\]/);
  });

  it('refuses an SDK file whose blobs do not hold together as a model set, and writes nothing', async () => {
    await inTempDir(async (dir) => {
      // In the simulated SDK's encoding: an opaque blob tied to an executable that is not there.
      const header = Buffer.from(JSON.stringify({ metadata: [], blobs: [{ kind: 'opaque', name: 'o', executable: 'missing' }], sizes: [4] }));
      const length = Buffer.alloc(8);
      length.writeBigUInt64LE(BigInt(header.length));
      await writeFile(join(dir, 'bad.sdk'), Buffer.concat([Buffer.from('SIMULATED-POPEF\n'), length, header, Buffer.from([1, 2, 3, 4])]));
      const r = await runCli(['import', join(dir, 'bad.sdk'), '-o', join(dir, 'out.popef')], { env: SIM });
      assert.equal(r.code, 2);
      assert.match(r.stderr, /bad\.sdk: .*"missing".*\[E_MODEL\]/);
      assert.deepEqual(await readdir(dir), ['bad.sdk']);
    });
  });

  it("passes the SDK writer's error through after reading the rest of the export, so the bridge stays in step", async () => {
    await inTempDir(async (dir) => {
      const { ipuPlugin } = await import('../../src/run/load-plugin.js');
      const { exportToSdk } = await import('../../src/run/sdk-convert.js');
      const bridge = ipuPlugin({ cwd: ROOT, env: { ...SIM, SIM_SDK_FAIL: 'error-on-write' } });
      try {
        // mnist has several payloads: the first write fails, the others must still be read.
        await assert.rejects(
          exportToSdk(bridge, [fixture('mnist/executable.popef')], join(dir, 'out.sdk'), { timeoutMs: 10_000 }),
          /plugin "ipu": RuntimeError: simulated popef: no space left for blob/,
        );
        // Still in step: the same bridge takes the next request and answers it in turn.
        await assert.rejects(exportToSdk(bridge, [fixture('seed/executable.popef')], join(dir, 'again.sdk'), { timeoutMs: 10_000 }), /no space left/);
      } finally {
        await bridge.dispose();
      }
      assert.deepEqual(await readdir(dir), []);
    });
  });

  it('refuses replies a bridge should never send during an import, and writes nothing', async () => {
    const { ChildProcessPlugin } = await import('../../src/run/child-plugin.js');
    const { importSdkFiles } = await import('../../src/run/sdk-convert.js');
    const cases: [unknown[], RegExp][] = [
      [[{ type: 'result' }], /the SDK bridge sent an unexpected "result" during import/],
      [[{ type: 'blob', kind: 'weights', name: 'w', payload: 4 }], /the SDK bridge sent a blob of unknown kind "weights"/],
      [[{ type: 'blob', kind: 'tensor', name: 'w', tensorInfo: { dtype: 'U8', shape: [4] } }], /the SDK bridge sent no data for tensor "w"/],
      [[{ type: 'blob', kind: 'metadata', metadata: { executable: 'e' } }], /the SDK bridge sent metadata that does not fit the open layout: /],
    ];
    await inTempDir(async (dir) => {
      const input = join(dir, 'in.sdk');
      await writeFile(input, 'the scripted bridge never reads this');
      for (const [script, expected] of cases) {
        const bridge = new ChildProcessPlugin({
          name: 'scripted',
          command: process.execPath,
          args: [join(ROOT, 'test/run/scripted-bridge.mjs')],
          env: { ...process.env, SCRIPTED_IMPORT: JSON.stringify(script) },
        });
        try {
          await assert.rejects(importSdkFiles(bridge, [input], join(dir, 'out.popef'), { timeoutMs: 10_000 }), expected);
        } finally {
          await bridge.dispose();
        }
        assert.deepEqual(await readdir(dir), ['in.sdk']);
      }
    });
  });

  it("passes the SDK reader's own error through, and leaves no partial output", async () => {
    await inTempDir(async (dir) => {
      const r = await runCli(['import', fixture('mnist/executable.popef'), '-o', join(dir, 'out.popef')], { env: SIM });
      assert.equal(r.code, 2);
      assert.match(
        r.stderr,
        /the SDK's popef\.Reader cannot read .*mnist\/executable\.popef: RuntimeError: simulated popef: .* is not a simulated PopEF file/,
      );
      assert.deepEqual(await readdir(dir), []);
    });
  });

  it('never overwrites without --force, and replaces with it', async () => {
    await inTempDir(async (dir) => {
      const sdkFile = join(dir, 'm.sdk');
      const out = join(dir, 'out.popef');
      assert.equal((await runCli(['export', fixture('seed/executable.popef'), '-o', sdkFile], { env: SIM })).code, 0);
      for (const [kind, input, target] of [
        ['import', sdkFile, out],
        ['export', fixture('seed/executable.popef'), sdkFile],
      ] as const) {
        const before = kind === 'import' ? 'keep me' : await readFile(target, 'utf8');
        if (kind === 'import') await writeFile(target, before);
        const r = await runCli([kind, input, '-o', target], { env: SIM });
        assert.equal(r.code, 2, r.stderr);
        assert.match(r.stderr, /\[E_EXISTS\]/);
        assert.match(r.stderr, /already exists/);
        assert.match(r.stderr, /--force/);
        assert.equal(await readFile(target, 'utf8'), before);
      }
      assert.equal((await runCli(['import', sdkFile, '-o', out, '--force'], { env: SIM })).code, 0);
      assert.equal((await runCli(['diff', fixture('seed/executable.popef'), out])).code, 0);
      assert.deepEqual((await readdir(dir)).sort(), ['m.sdk', 'out.popef']);
    });
  });

  it('leaves nothing behind when the disk fills (file size limit) on either side', () => {
    // A real process under `ulimit -f`: writes past the limit fail with EFBIG.
    const script = [
      'set -u',
      'd=$(mktemp -d)',
      `node bin/popef.cjs export fixtures/mnist/executable.popef -o "$d/m.sdk" >/dev/null || exit 90`,
      '(ulimit -f 8; node bin/popef.cjs import "$d/m.sdk" -o "$d/big.popef"); echo "import=$?"',
      '(ulimit -f 8; node bin/popef.cjs export fixtures/mnist/executable.popef -o "$d/big.sdk"); echo "export=$?"',
      'ls -A "$d"',
      'rm -rf "$d"',
    ].join('\n');
    const r = spawnSync('bash', ['-c', script], { cwd: ROOT, env: SIM, encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, 'import=2\nexport=2\nm.sdk\n');
    assert.match(
      r.stderr,
      /big\.popef: cannot write the file: EFBIG \[E_IO\]\n {2}hint: the file is larger than this process may write \(ulimit -f\)/,
    );
    assert.match(r.stderr, /File too large/);
  });

  it('stops the bridge and removes the partial output when interrupted (Ctrl-C)', async () => {
    const { ipuPlugin } = await import('../../src/run/load-plugin.js');
    const { importSdkFiles } = await import('../../src/run/sdk-convert.js');
    await inTempDir(async (dir) => {
      assert.equal((await runCli(['export', fixture('mnist/executable.popef'), '-o', join(dir, 'm.sdk')], { env: SIM })).code, 0);
      const controller = new AbortController();
      const bridge = ipuPlugin({ cwd: ROOT, env: { ...SIM, SIM_SDK_FAIL: 'hang-on-read' }, signal: controller.signal });
      try {
        setTimeout(() => controller.abort(), 300);
        const started = Date.now();
        await assert.rejects(importSdkFiles(bridge, [join(dir, 'm.sdk')], join(dir, 'out.popef'), { signal: controller.signal }), /interrupted/);
        assert.ok(Date.now() - started < 5000);
      } finally {
        await bridge.dispose();
      }
      assert.deepEqual(await readdir(dir), ['m.sdk']);
    });
  });

  it("stops the bridge and removes the SDK writer's temporary file when an export is interrupted", async () => {
    const { ipuPlugin } = await import('../../src/run/load-plugin.js');
    const { exportToSdk } = await import('../../src/run/sdk-convert.js');
    await inTempDir(async (dir) => {
      const controller = new AbortController();
      const bridge = ipuPlugin({ cwd: ROOT, env: { ...SIM, SIM_SDK_FAIL: 'hang-on-write' }, signal: controller.signal });
      try {
        const exporting = exportToSdk(bridge, [fixture('mnist/executable.popef')], join(dir, 'out.sdk'), { signal: controller.signal });
        // The SDK writer has created its (temporary) file before it hangs.
        for (let i = 0; i < 100 && (await readdir(dir)).length === 0; i++) await new Promise((r) => setTimeout(r, 50));
        assert.match((await readdir(dir)).join(), /^\.out\.sdk\.popef-tmp-.+-\d+-[0-9a-f]{12}$/);
        controller.abort();
        await assert.rejects(exporting, /interrupted/);
      } finally {
        await bridge.dispose();
      }
      assert.deepEqual(await readdir(dir), []);
    });
  });
});
