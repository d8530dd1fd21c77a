// popef doctor without the SDK, with the simulated SDK in each release, with
// an SDK build that lacks a call; and SDK-API.md against the bridge's list.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { schemaErrors } from '../../src/json-schemas.js';
import type { DoctorReport } from '../../src/run/sdk-doctor.js';
import { ROOT, fixture, runCli } from '../helpers.js';

const PYTHON = process.env.POPEF_PYTHON ?? 'python3';
const hasNumpy = spawnSync(PYTHON, ['-c', 'import numpy']).status === 0;
// Under CI=true these run, and fail, without numpy: .ci/run installs it.
const skip = hasNumpy || process.env.CI === 'true' ? false : `${PYTHON} has no numpy (bash .ci/run installs it; set POPEF_PYTHON)`;

function env(extra: Record<string, string>): Record<string, string> {
  return { ...(process.env as Record<string, string>), POPEF_PYTHON: PYTHON, ...extra };
}

async function doctor(extra: Record<string, string>): Promise<{ code: number; report: DoctorReport; text: string }> {
  const r = await runCli(['doctor', '--json'], { env: env(extra) });
  const report = JSON.parse(r.stdout) as DoctorReport;
  assert.deepEqual(schemaErrors('doctor', report), []);
  const text = await runCli(['doctor'], { env: env(extra) });
  assert.equal(text.code, r.code);
  return { code: r.code, report, text: text.stdout };
}

describe('popef doctor', { skip }, () => {
  it('without the SDK: a clear report, exit 1', async () => {
    const { code, report, text } = await doctor({ PYTHONPATH: '' });
    assert.equal(code, 1);
    assert.equal(report.python.found, true);
    assert.equal(report.imports.numpy.ok, true);
    assert.equal(report.imports.popef.ok, false);
    assert.match(report.problems.join('\n'), /popef does not import: No module named 'popef'/);
    assert.match(text, /The IPU bridge cannot work here/);
    assert.match(text, /SDK calls: not checked/);
    // No module imported, so none could say its release: that is the reason given, not a missing __version__.
    assert.match(text, /^Poplar SDK release: unknown \(the SDK modules do not import\)$/m);
  });

  it('without an interpreter: says so, exit 1', async () => {
    const r = await runCli(['doctor', '--json'], { env: env({ POPEF_PYTHON: '/nonexistent/python3' }) });
    assert.equal(r.code, 1);
    const report = JSON.parse(r.stdout) as DoctorReport;
    assert.equal(report.python.found, false);
    assert.match(report.problems[0] ?? '', /could not start \/nonexistent\/python3/);
  });

  for (const version of ['3.0.0', '3.2.0', '3.3.0', '3.4.0']) {
    it(`with the simulated SDK ${version}: every required call present, exit 0`, async () => {
      const { code, report, text } = await doctor({ PYTHONPATH: fixture('sim-sdk'), POPEF_SIM_SDK_VERSION: version });
      assert.equal(code, 0, report.problems.join('\n'));
      assert.equal(report.sdkVersion, version);
      assert.ok(report.calls.filter((c) => c.need === 'required').every((c) => c.present));
      const iterations = report.calls.find((c) => c.call === 'Metadata.deviceIterations');
      assert.equal(iterations?.present, version >= '3.3');
      assert.match(text, /The IPU bridge has everything it needs here/);
    });
  }

  it('with an SDK that lacks a call: names it (exit 1), and the bridge refuses to run naming it too', async () => {
    const extra = { PYTHONPATH: fixture('sim-sdk'), POPEF_SIM_SDK_DROP: 'model_runtime.InputMemoryView' };
    const { code, report } = await doctor(extra);
    assert.equal(code, 1);
    assert.deepEqual(report.problems, ['model_runtime.InputMemoryView is missing: run cannot proceed']);
    assert.deepEqual(report.operations.find((o) => o.operation === 'read')?.withoutFeeds, { ok: true, absent: [] });
    const run = await runCli(['run', fixture('mnist/executable.popef'), '--plugin', 'ipu', '--random'], { env: env(extra) });
    assert.equal(run.code, 2);
    assert.match(run.stderr, /this Poplar SDK \(release 3\.4\.0\) has no model_runtime\.InputMemoryView, which the bridge needs/);
  });
});

describe('popef doctor on simulated releases without the inferred calls', { skip }, () => {
  // What a -no-inferred release lacks (fixtures/sim-sdk/README.md).
  const LACKING = [
    'FeedDataInfo',
    'FeedDataInfo.setName',
    'FeedDataInfo.setTensorInfo',
    'Metadata.setIsPOD',
    'Metadata.isPOD',
    'Metadata.setNumProcesses',
    'Metadata.numProcesses',
    'Metadata.setSeedHandle',
    'Metadata.seedHandle',
  ];
  for (const version of ['3.2.0-no-inferred', '3.4.0-no-inferred']) {
    it(`SDK ${version}: exit 0, the absent calls named unverified, export of feeds the one thing that cannot proceed`, async () => {
      const { code, report, text } = await doctor({ PYTHONPATH: fixture('sim-sdk'), POPEF_SIM_SDK_VERSION: version });
      assert.equal(code, 0, report.problems.join('\n'));
      assert.deepEqual(report.problems, []);
      assert.deepEqual([...report.unverified].sort(), LACKING.map((c) => `popef.${c}`).sort());
      for (const c of report.calls.filter((x) => LACKING.includes(x.call))) assert.equal(c.need, 'inferred', c.call);
      const status = Object.fromEntries(report.operations.map((o) => [o.operation, o]));
      for (const op of ['read', 'run', 'import', 'export']) assert.equal(status[op]?.withoutFeeds.ok, true, op);
      for (const op of ['read', 'run', 'import']) assert.equal(status[op]?.anyModel.ok, true, op);
      assert.deepEqual(status.export?.anyModel, {
        ok: false,
        absent: ['popef.FeedDataInfo', 'popef.FeedDataInfo.setName', 'popef.FeedDataInfo.setTensorInfo'],
      });
      assert.match(text, /popef\.FeedDataInfo[ │]+inferred[ │]+export:feed[ │]+no: unverified /);
      assert.match(text, /popef\.Metadata\.isPOD[ │]+inferred[ │]+read, import[ │]+no: unverified \(fallback\)/);
      assert.match(text, /^Unverified: 9 call\(s\) whose Python spelling is inferred/m);
      assert.match(text, /^export: can proceed for models without feed blobs; not for others \(popef\.FeedDataInfo, /m);
      assert.match(text, /^run: can proceed$/m);
      assert.match(text, /The IPU bridge can read files and run models without feeds here\./);
    });
  }

  it('an absent inferred call that running needs stops run, and doctor names it unverified (exit 1)', async () => {
    const { code, report } = await doctor({ PYTHONPATH: fixture('sim-sdk'), POPEF_SIM_SDK_DROP: 'popef.Anchor.setHandle' });
    assert.equal(code, 1);
    assert.deepEqual(report.problems, ['popef.Anchor.setHandle is absent (an inferred spelling, unverified): run cannot proceed']);
    assert.deepEqual(report.unverified, ['popef.Anchor.setHandle']);
    const run = await runCli(['run', fixture('mnist/executable.popef'), '--plugin', 'ipu', '--random'], {
      env: env({ PYTHONPATH: fixture('sim-sdk'), POPEF_SIM_SDK_DROP: 'popef.Anchor.setHandle' }),
    });
    assert.equal(run.code, 2);
    assert.match(
      run.stderr,
      /has no popef\.Anchor\.setHandle \(inferred from the C\+\+ API: its Python spelling is unverified\), which the bridge needs/,
    );
  });
});

describe('src/run/bridge/SDK-API.md', () => {
  it('has one row per SDK call of the bridge, with the same need and the same operations', async () => {
    const table = await readFile(join(ROOT, 'src/run/bridge/SDK-API.md'), 'utf8');
    const rows = [...table.matchAll(/^\| `(popef|model_runtime)` \| `([^`]+)` \| (required|guarded|inferred) \| ([^|]+) \|/gm)].map(
      (m) => `${m[1] ?? ''} ${m[2] ?? ''} ${m[3] ?? ''} ${(m[4] ?? '').trim()}`,
    );
    const listed = spawnSync(
      'python3',
      [
        '-B',
        '-c',
        'import sys; sys.path.insert(0, sys.argv[1]); from popef_bridge import sdk as b; print("\\n".join("%s %s %s %s" % (c[0], c[1], c[2], ", ".join(c[3])) for c in b.SDK_CALLS))',
        join(ROOT, 'src/run/bridge'),
      ],
      { encoding: 'utf8' },
    );
    assert.equal(listed.status, 0, listed.stderr);
    assert.deepEqual([...rows].sort(), listed.stdout.trim().split('\n').sort());
    assert.equal(new Set(rows).size, rows.length, 'no row twice');
  });
});
