import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { schemaErrors } from '../../src/json-schemas.js';
import { FIXTURES, fixture, fixtureManifest, matchGolden, runCli } from '../helpers.js';
import { SEED_REPORT } from './seed-report.js';

/** The ANSI escape character, built at run time so the regexes hold no control characters. */
const ESC = String.fromCharCode(27);

const golden = (name: string, actual: string): Promise<void> => matchGolden('dump', name, actual);

describe('popef dump: the seed acceptance', () => {
  it('prints the seed report exactly, run in fixtures/mnist', async () => {
    const r = await runCli(['dump', '--user-anchors', 'executable.popef'], { cwd: fixture('mnist') });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, SEED_REPORT);
    assert.equal(r.stderr, '');
  });
});

const entries = await fixtureManifest();

describe('popef dump: golden outputs for every fixture', () => {
  for (const entry of entries) {
    const args = [entry.path, ...(entry.with ?? [])];
    const stem = entry.path.replace(/\//g, '__');
    const expect = entry.expect;
    if (expect.ok) {
      const warnings: readonly string[] = expect.warnings ?? [];
      it(`${entry.path}: text, --all, --json, --markdown`, async () => {
        for (const [suffix, flags] of [
          ['txt', []],
          ['all.txt', ['--all']],
          ['json', ['--json']],
          ['md', ['--markdown']],
        ] as const) {
          const r = await runCli(['dump', ...flags, ...args], { cwd: FIXTURES });
          assert.equal(r.code, 0, r.stderr);
          if (suffix === 'json') assert.deepEqual(schemaErrors('dump', JSON.parse(r.stdout)), []);
          await golden(`${stem}.${suffix}`, r.stdout);
          assert.equal(r.stderr.split('\n').filter((l) => l.startsWith('popef: warning:')).length, warnings.length);
        }
      });
    } else {
      const flags = expect.onlyWithVerify === true ? ['--verify'] : [];
      it(`${entry.path}: exit 2 with ${expect.code}`, async () => {
        const r = await runCli(['dump', ...flags, ...args], { cwd: FIXTURES });
        assert.equal(r.code, 2);
        assert.match(r.stderr, new RegExp(`^popef: error: ${entry.path.replace(/[.]/g, '\\.')}: .*\\[${expect.code}\\]$`, 'm'));
        await golden(`${stem}.err`, r.stderr);
      });
    }
  }
});

describe('popef dump: options and errors', () => {
  it('--verify checks every payload and says so', async () => {
    const r = await runCli(['dump', '--verify', 'compressed/executable.popef'], { cwd: FIXTURES });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^Verified: 2 blob\(s\), \d+(\.\d+)? (B|KiB) of payload: all checksums match$/m);
  });

  it('--verify of a damaged file says damage was found, and in how many blobs', async () => {
    const r = await runCli(['dump', '--verify', 'malformed/payload-bitflip.popef'], { cwd: FIXTURES });
    assert.equal(r.code, 2);
    assert.match(r.stdout, /^Damage found in 1 of \d+ blob\(s\) \(the errors above name each\)/m);
    assert.doesNotMatch(r.stdout, /Verified:/);
    const json = await runCli(['dump', '--verify', '--json', 'malformed/payload-bitflip.popef'], { cwd: FIXTURES });
    assert.equal((JSON.parse(json.stdout) as { verify: { damaged: number } }).verify.damaged, 1);
  });

  it('--all lists each opaque blob once, and blob sizes for people (exact in --json)', async () => {
    const r = await runCli(['dump', '--all', 'mnist/executable.popef'], { cwd: FIXTURES });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.match(/"onnx"/g)?.length, 1, r.stdout);
    assert.match(r.stdout, /│ OPAQUE +│ onnx -> \S+ +│ \d+ +│ \d+ B +│ \d+ B /);
    const json = JSON.parse((await runCli(['dump', '--json', 'mnist/executable.popef'], { cwd: FIXTURES })).stdout) as {
      blobs: { payloadLength: number | string }[];
    };
    assert.ok(json.blobs.every((b) => /^\d+$/.test(String(b.payloadLength))));
  });

  it('--verify reports the damaged blob with offset and both checksums, still printing the report', async () => {
    const r = await runCli(['dump', '--verify', '--json', 'malformed/payload-bitflip.popef'], { cwd: FIXTURES });
    assert.equal(r.code, 2);
    assert.match(
      r.stderr,
      /payload-bitflip\.popef: offset 152: POPLAR_EXECUTABLE payload crc32: payload checksum mismatch: stored 0x[0-9a-f]{8}, computed 0x[0-9a-f]{8} \[E_CHECKSUM\]/,
    );
    const report = JSON.parse(r.stdout) as { verify: { ok: boolean } };
    assert.equal(report.verify.ok, false);
  });

  it('reports the good files when another one is bad, and exits 2', async () => {
    const r = await runCli(['dump', 'mnist/executable.popef', 'malformed/not-popef.bin', 'no/such.popef'], { cwd: FIXTURES });
    assert.equal(r.code, 2);
    assert.match(r.stdout, /^PopEF file: mnist\/executable\.popef$/m);
    assert.match(
      r.stderr,
      /not-popef\.bin: offset 0: blob magic: not a PopEF open-layout file: the blob signature is missing \[E_NOT_POPEF\]\n {2}hint: if the Poplar SDK wrote it, popef reads it with the SDK.s own popef\.Reader where the SDK is enabled, and it is not here \(run "popef doctor" to see why\); or convert it once on a machine with the SDK: popef import FILE/,
    );
    assert.match(r.stderr, /no\/such\.popef: cannot open the file: ENOENT \[E_IO\]\n {2}hint: check the path/);
  });

  it('shows how a text file given for the PopEF begins (a config.pbtxt given by mistake)', async () => {
    const r = await runCli(['dump', 'repos/clean/mnist/config.pbtxt'], { cwd: FIXTURES });
    assert.equal(r.code, 2);
    assert.match(
      r.stderr,
      /config\.pbtxt: offset 0: blob magic: not a PopEF open-layout file: the blob signature is missing \(the file begins with text: "name: \\"mnist\\"\\nbackend: \\""\.\.\.\) \[E_NOT_POPEF\]\n/,
    );
  });

  it('reads a model split over two files as one model', async () => {
    const r = await runCli(['dump', '--json', 'split/executable.popef', 'split/variables.popef'], { cwd: FIXTURES });
    const report = JSON.parse(r.stdout) as { models: { tensors: string[]; metadata: { anchors: { name: string; role: string }[] } }[] };
    assert.equal(report.models.length, 1);
    assert.deepEqual(report.models[0]?.tensors, ['w']);
    assert.equal(report.models[0].metadata.anchors.find((a) => a.name === 'w')?.role, 'stored');
  });

  it('groups a file with two models by executable name', async () => {
    const r = await runCli(['dump', 'two-models/models.popef'], { cwd: FIXTURES });
    assert.match(r.stdout, /^Executable: "encoder"$[\s\S]*^Executable: "decoder"$/m);
  });

  it('--blobs prints the inventory table alone', async () => {
    const r = await runCli(['dump', '--blobs', 'seed/executable.popef'], { cwd: FIXTURES });
    assert.doesNotMatch(r.stdout, /Anchors:/);
    assert.match(r.stdout, /│ 0 │ POPLAR_EXECUTABLE │ 5230962391836378370 │ 0 +│/);
  });

  it('uses colour only when forced or on a terminal, and honours NO_COLOR and --no-color', async () => {
    const plain = await runCli(['dump', 'mnist/executable.popef'], { cwd: FIXTURES });
    assert.doesNotMatch(plain.stdout, new RegExp(`${ESC}\\[`));
    const forced = await runCli(['dump', 'mnist/executable.popef'], { cwd: FIXTURES, env: { FORCE_COLOR: '1' } });
    assert.match(forced.stdout, new RegExp(`${ESC}\\[1mAnchors:`));
    const noColor = await runCli(['dump', 'mnist/executable.popef'], { cwd: FIXTURES, env: { FORCE_COLOR: '1', NO_COLOR: '1' } });
    assert.doesNotMatch(noColor.stdout, new RegExp(`${ESC}\\[`));
    const flag = await runCli(['--no-color', 'dump', 'mnist/executable.popef'], { cwd: FIXTURES, env: { FORCE_COLOR: '1' } });
    assert.doesNotMatch(flag.stdout, new RegExp(`${ESC}\\[`));
  });

  it('refuses --json with --markdown', async () => {
    const r = await runCli(['dump', '--json', '--markdown', 'mnist/executable.popef'], { cwd: FIXTURES });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--format json and --format markdown were both asked for/);
  });

  it('documents the user-provided rule in --help', async () => {
    const r = await runCli(['dump', '--help']);
    assert.equal(r.code, 0);
    assert.match(r.stdout, /User-provided anchors are what a caller feeds or receives at run time/);
  });
});
