// The defaults and hints of `popef run`, `serve` and `config` lead somewhere
// on a machine without the Poplar SDK (issue 27, item 4).
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseNameMap } from '../../src/triton/name-map.js';
import { parsePbtxt } from '../../src/triton/pbtxt-parser.js';
import { ROOT, fixture, inTempDir, runCli } from '../helpers.js';

const SIM = { ...process.env, PYTHONPATH: fixture('sim-sdk') } as Record<string, string>;
const NO_SDK = { ...process.env, PYTHONPATH: '' } as Record<string, string>;

describe("popef run's default plugin", () => {
  it('is cpu without the SDK when the model carries its ONNX graph, and says so', async () => {
    const r = await runCli(['run', fixture('mnist/executable.popef'), '--random', '--json'], { env: NO_SDK });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /^popef run: plugin cpu: no Poplar SDK was found, and the model has its source ONNX graph \(choose with --plugin\)\n/);
    assert.equal((JSON.parse(r.stdout) as { plugin: string }).plugin, 'cpu');
  });

  it('is ipu where the SDK is found', async () => {
    const r = await runCli(['run', fixture('mnist/executable.popef'), '--random', '--json'], { env: SIM });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /popef run: plugin ipu: the Poplar SDK is enabled/);
    assert.equal((JSON.parse(r.stdout) as { plugin: string }).plugin, 'ipu');
  });

  it('is ipu for a model without a graph, whose refusal names --plugin cpu and --reference', async () => {
    const r = await runCli(['run', fixture('weights/executable.popef'), '--random'], { env: NO_SDK });
    assert.equal(r.code, 2);
    assert.match(
      r.stderr,
      /plugin "ipu" cannot run here: [^\n]*\[E_PLUGIN_UNAVAILABLE\]\n {2}hint: enable the Poplar SDK[^\n]*; or run the source ONNX graph on this machine with --plugin cpu \(from --reference model\.onnx/,
    );
  });

  it('names --plugin ipu when cpu cannot run here', async () => {
    const r = await runCli(['run', fixture('mnist/executable.popef'), '--random', '--plugin', 'cpu'], {
      env: { ...NO_SDK, POPEF_ONNXRUNTIME_MODULE: 'onnxruntime-node-is-not-here' },
    });
    assert.equal(r.code, 2);
    assert.match(
      r.stderr,
      /plugin "cpu" cannot run here: onnxruntime-node cannot be loaded[\s\S]*hint: [^\n]*; or run the model itself with --plugin ipu where the Poplar SDK is enabled/,
    );
  });

  it('names the built-in plugins for a --plugin that is neither one of them nor a package (a typo)', async () => {
    const r = await runCli(['run', fixture('mnist/executable.popef'), '--random', '--plugin', 'gpu'], { env: NO_SDK });
    assert.equal(r.code, 2, r.stderr);
    assert.equal(
      r.stderr,
      'popef: error: no plugin named gpu: it is neither a built-in plugin (ipu, cpu, triton) nor an installed package [E_INVALID_INPUT]\n' +
        "  hint: give --plugin ipu|cpu|triton, a path to a plugin module (.js, .mjs) or program, or an installed package's name\n",
    );
  });
});

describe('every option an error of the plugins names exists', () => {
  it('run and serve take each --option that the cpu plugin and the plugin choice mention', async () => {
    const named = new Set<string>();
    for (const file of ['src/run/cpu-plugin.ts', 'src/cli/commands/plugin-choice.ts']) {
      for (const m of (await readFile(join(ROOT, file), 'utf8')).matchAll(/--([a-z][a-z-]*)/g)) named.add(`--${m[1] ?? ''}`);
    }
    assert.ok(named.has('--reference') && named.has('--plugin'), [...named].join(' '));
    for (const command of ['run', 'serve']) {
      const help = (await runCli([command, '--help'])).stdout;
      for (const option of named) assert.match(help, new RegExp(`${option}[ ,<]`), `${command} has no ${option}`);
    }
  });

  it('serve --reference gives the graph of a model that has none', async () => {
    const r = await runCli(['serve', fixture('repos/clean'), '--reference', 'nope.onnx', '--no-http', '--no-grpc']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--no-http and --no-grpc leave nothing to serve/);
    assert.doesNotMatch(r.stderr, /unknown option/);
  });
});

describe('popef config never drops the name map', () => {
  const renamed = ['--name', 'input=digit_image'];

  it('without -o prints config.pbtxt on stdout and name_map.json, with --name, on stderr', async () => {
    const r = await runCli(['config', fixture('mnist/executable.popef'), ...renamed]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(parsePbtxt(r.stdout).message.input?.[0]?.name, 'digit_image');
    const at = r.stderr.indexOf('popef: name_map.json');
    assert.ok(at >= 0, r.stderr);
    const map = r.stderr.slice(r.stderr.indexOf('\n', at) + 1);
    assert.deepEqual(parseNameMap(map).entries.find((e) => e.anchor === 'input')?.name, 'digit_image');
  });

  it("with -o DIR writes Triton's layout, DIR/MODEL/config.pbtxt and DIR/MODEL/1/name_map.json", async () => {
    await inTempDir(async (dir) => {
      const r = await runCli(['config', fixture('mnist/executable.popef'), '-o', dir, '-m', 'mnist', ...renamed]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(parsePbtxt(await readFile(join(dir, 'mnist/config.pbtxt'), 'utf8')).message.name, 'mnist');
      assert.equal(
        parseNameMap(await readFile(join(dir, 'mnist/1/name_map.json'), 'utf8')).entries.find((e) => e.anchor === 'input')?.name,
        'digit_image',
      );
      assert.match(r.stdout, /put the PopEF file in .*mnist\/1\/ as executable\.popef/);
      // Without -m the directory takes the executable's name, and the config no name (Triton uses the directory's).
      const unnamed = await runCli(['config', fixture('mnist/executable.popef'), '-o', join(dir, 'b')]);
      assert.equal(unnamed.code, 0, unnamed.stderr);
      assert.equal(parsePbtxt(await readFile(join(dir, 'b/5230962391836378370/config.pbtxt'), 'utf8')).message.name, undefined);
    });
  });

  it("validate's hint for a missing name map says how config writes it", async () => {
    const r = await runCli(['validate', fixture('repos/name-map-missing')]);
    assert.match(r.stderr + r.stdout, /hint: popef config FILE -o REPOSITORY -m 'mnist' writes it \(MODEL\/1\/name_map\.json\)/);
  });
});
