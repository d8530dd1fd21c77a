import { join, resolve } from 'node:path';
import { ErrorCode, PopefError, isNotFound } from '../../errors.js';
import { ModelSet } from '../../format/model-set.js';
import { FILE_LIMITS, readRegularFile } from '../../io/local-file.js';
import { chooseColour } from '../../present/colour.js';
import { renderRunText, type RunReport } from '../../present/run-report.js';
import { compareValues, type Comparison } from '../../run/compare.js';
import { loadPlugin, type PluginContext } from '../../run/load-plugin.js';
import { resolveTarget } from '../../run/model-target.js';
import type { ExecutionPlugin, ModelTensors, Tensor, TensorSpec } from '../../run/plugin-api.js';
import { latency, summarize, topK } from '../../run/stats.js';
import { modelTensorSpecs, toNumbers } from '../../run/tensor.js';
import { loadInput, randomTensor } from '../../run/tensor-io/inputs.js';
import { readNpy, writeNpy } from '../../run/tensor-io/npy.js';
import { writeFilesAtomically } from '../../triton/write-files.js';
import { VERSION } from '../../version.js';
import { ExitCode } from '../exit-codes.js';
import type { CliIo } from '../io.js';
import { positiveSecondsMs } from './options.js';
import { assertAvailable, defaultPlugin } from './plugin-choice.js';
import type { RunFlags } from './run.js';

function usage(message: string, suggestion?: string): PopefError {
  return new PopefError(ErrorCode.InvalidInput, message, { suggestion });
}

function numberList(text: string | undefined, what: string): number[] | undefined {
  if (text === undefined) return undefined;
  const values = text.split(',').map((s) => Number(s.trim()));
  if (values.length === 0 || values.some((v) => !Number.isFinite(v))) throw usage(`${what} must be numbers separated by commas, not "${text}"`);
  return values;
}

/** --atol 1e-3 --atol out=0.1 -> a default and per-output values. */
function tolerances(values: readonly string[] | undefined, fallback: number, what: string): { all: number; by: Map<string, number> } {
  let all = fallback;
  const by = new Map<string, number>();
  for (const v of values ?? []) {
    const at = v.lastIndexOf('=');
    const number = Number(at === -1 ? v : v.slice(at + 1));
    if (!Number.isFinite(number) || number < 0) throw usage(`${what} "${v}" is not a non-negative number (or NAME=NUMBER)`);
    if (at === -1) all = number;
    else by.set(v.slice(0, at), number);
  }
  return { all, by };
}

/** File names for outputs: anchor and client names may hold "/" or ":". */
export function outputFileName(name: string): string {
  return `${name.replace(/[^A-Za-z0-9._-]/g, '_')}.npy`;
}

/**
 * One file name per output, refusing two outputs that would share one
 * ("a/b" and "a_b"; or names differing only in case, which share a file on
 * case-insensitive file systems): one of them would be lost without a word.
 */
export function outputFileNames(names: readonly string[]): Map<string, string> {
  const files = new Map<string, string>();
  const taken = new Map<string, string>();
  for (const name of names) {
    const file = outputFileName(name);
    const other = taken.get(file.toLowerCase());
    if (other !== undefined) {
      throw new PopefError(ErrorCode.InvalidInput, `outputs "${other}" and "${name}" would both be saved as ${file}`, {
        suggestion: 'give one of them another name in name_map.json',
      });
    }
    taken.set(file.toLowerCase(), name);
    files.set(name, file);
  }
  return files;
}

/** --plugin, or the default: triton with --url, ipu beside --compare-with, else whichever of ipu and cpu can run here. */
async function pickPlugin(flags: RunFlags, hasGraph: boolean, context: PluginContext, io: CliIo): Promise<ExecutionPlugin> {
  if (flags.plugin !== undefined) return loadPlugin(flags.plugin, context);
  if (flags.url !== undefined) return loadPlugin('triton', context);
  if (flags.compareWith !== undefined) return loadPlugin(flags.compareWith === 'ipu' ? 'cpu' : 'ipu', context);
  const chosen = await defaultPlugin({ hasGraph }, context);
  io.stderr(`popef run: plugin ${chosen.plugin.name}: ${chosen.why} (choose with --plugin)\n`);
  return chosen.plugin;
}

export async function runCommand(modelArgs: string[], flags: RunFlags, io: CliIo): Promise<number> {
  const timeoutMs = positiveSecondsMs(flags.timeout, '--timeout');
  const durationMs = flags.duration === undefined ? undefined : Number(flags.duration) * 1000;
  if (durationMs !== undefined && !(durationMs > 0)) throw usage(`--duration "${flags.duration ?? ''}" is not a positive number of seconds`);
  const range = numberList(flags.range, '--range');
  if (range !== undefined && (range.length !== 2 || (range[0] ?? 0) > (range[1] ?? 0))) throw usage('--range takes LOW,HIGH with LOW <= HIGH');
  const image = { scale: numberList(flags.scale, '--scale')?.[0], mean: numberList(flags.mean, '--mean'), std: numberList(flags.std, '--std') };
  const atol = tolerances(flags.atol, 1e-5, '--atol');
  const rtol = tolerances(flags.rtol, 1e-3, '--rtol');
  const pluginOptions: Record<string, string> = {};
  if (flags.reference !== undefined) pluginOptions.reference = resolve(io.cwd, flags.reference);
  for (const m of flags.referenceMap ?? []) {
    const at = m.indexOf('=');
    if (at <= 0) throw usage(`--reference-map "${m}" is not ANCHOR=NAME`);
    pluginOptions[`map.${m.slice(0, at)}`] = m.slice(at + 1);
  }
  if (flags.expect !== undefined && flags.compareWith !== undefined) throw usage('--expect and --compare-with are exclusive: compare with saved outputs or with another plugin');
  for (const o of flags.pluginOption ?? []) {
    const at = o.indexOf('=');
    if (at <= 0) throw usage(`--plugin-option "${o}" is not KEY=VALUE`);
    pluginOptions[o.slice(0, at)] = o.slice(at + 1);
  }

  const target = await resolveTarget(modelArgs, io.cwd, flags.version);
  // The executable to run: checked here, so that plugins get a valid model set.
  const set = await ModelSet.open(target.files);
  let executable: string;
  let tensors: ModelTensors;
  let hasGraph: boolean;
  try {
    const chosen = set.model(flags.executable);
    executable = chosen.name;
    tensors = modelTensorSpecs(set, executable);
    hasGraph = pluginOptions.reference !== undefined || chosen.opaques.some((o) => o.name === 'onnx' || o.name.startsWith('onnx:'));
  } finally {
    await set.close();
  }
  const client = (anchor: string): string => target.clientNames.get(anchor) ?? anchor;
  // The triton plugin asks a server for the model by its name and client tensor names.
  if (flags.url !== undefined) pluginOptions.url = flags.url;
  if (target.modelName !== undefined && !Object.hasOwn(pluginOptions, 'model')) pluginOptions.model = target.modelName;
  for (const [anchor, name] of target.clientNames) if (!Object.hasOwn(pluginOptions, `name.${anchor}`)) pluginOptions[`name.${anchor}`] = name;
  if ((flags.plugin === 'triton' || flags.compareWith === 'triton') && flags.url === undefined) throw usage('--plugin triton needs --url grpc://HOST:PORT or http://HOST:PORT');

  const context = { cwd: io.cwd, env: io.env, signal: io.signal, requestTimeoutMs: timeoutMs, host: `popef-toolkit ${VERSION}`, url: flags.url };
  const plugin: ExecutionPlugin = await pickPlugin(flags, hasGraph, context, io);
  const reference: ExecutionPlugin | undefined = flags.compareWith === undefined ? undefined : await loadPlugin(flags.compareWith, context);
  try {
    for (const p of [plugin, reference]) if (p !== undefined) await assertAvailable(p);
    const model = await plugin.open({ files: target.files, executable, options: pluginOptions, tensors });

    // Inputs, by the name the user knows (client name, or anchor name).
    const byName = new Map<string, TensorSpec>();
    for (const spec of model.inputs) {
      byName.set(spec.name, spec);
      byName.set(client(spec.name), spec);
    }
    const inputs = new Map<string, Tensor>();
    for (const given of flags.input ?? []) {
      const at = given.indexOf('=');
      if (at <= 0) throw usage(`--input "${given}" is not NAME=FILE`);
      const name = given.slice(0, at);
      const spec = byName.get(name);
      if (spec === undefined) {
        throw usage(`the model has no input "${name}"; its inputs: ${model.inputs.map((s) => `"${client(s.name)}" ${s.dtype} [${s.shape.join(', ')}]`).join(', ')}`);
      }
      if (inputs.has(spec.name)) throw usage(`input "${name}" is given twice`);
      inputs.set(spec.name, await loadInput(spec, resolve(io.cwd, given.slice(at + 1)), name, image));
    }
    model.inputs.forEach((spec, i) => {
      if (inputs.has(spec.name)) return;
      if (flags.random !== true) {
        throw usage(`input "${client(spec.name)}" (${spec.dtype} [${spec.shape.join(', ')}]) is not given`, 'give it with --input NAME=FILE, or use --random');
      }
      inputs.set(spec.name, randomTensor(spec, { seed: flags.seed + i, range: range as [number, number] | undefined }));
    });

    // Run: warm-up, then timed runs (or a duration), with progress on a terminal for long runs.
    // Each run receives its outputs into the previous run's buffers (only the last run's are kept).
    const lend = (previous: ReadonlyMap<string, Tensor>): { into: Map<string, Uint8Array> } => ({ into: new Map([...previous].map(([name, t]) => [name, t.data])) });
    let outputs = new Map<string, Tensor>();
    for (let i = 0; i < flags.warmup; i++) outputs = await model.run(inputs, lend(outputs));
    const samples: number[] = [];
    const started = performance.now();
    let lastDraw = 0;
    const expectedRuns = flags.iterations;
    for (let i = 0; durationMs === undefined ? i < expectedRuns : performance.now() - started < durationMs || i === 0; i++) {
      const t0 = performance.now();
      outputs = await model.run(inputs, lend(outputs));
      samples.push(performance.now() - t0);
      const elapsed = performance.now() - started;
      if (io.stderrIsTTY && elapsed > 1000 && elapsed - lastDraw > 100) {
        lastDraw = elapsed;
        const done = durationMs === undefined ? `${i + 1}/${expectedRuns} runs` : `${(elapsed / 1000).toFixed(1)}/${(durationMs / 1000).toFixed(1)} s`;
        io.stderr(`\rrunning: ${done}`);
      }
    }
    if (lastDraw > 0) io.stderr('\n');
    const totalMs = performance.now() - started;
    await model.close();

    const firstInput = model.inputs[0];
    const batch = firstInput?.shape[0] ?? 1;
    const report: RunReport = {
      tool: 'popef-toolkit',
      plugin: plugin.name,
      model: target.description,
      executable,
      inputs: model.inputs.map((s) => ({ name: client(s.name), anchor: s.name, dtype: s.dtype, shape: s.shape })),
      outputs: model.outputs.map((spec) => {
        const t = outputs.get(spec.name);
        if (t === undefined) throw new PopefError(ErrorCode.Plugin, `plugin "${plugin.name}" returned no output "${spec.name}"`, {});
        return { ...summarize(t, client(spec.name)), anchor: spec.name, ...(flags.topK === undefined ? {} : { topK: topK(t, flags.topK) }) };
      }),
      timing: { ...latency(samples), warmup: flags.warmup, totalMs, batch, samplesPerSecond: (samples.length * batch * 1000) / Math.max(totalMs, 1e-9) },
      comparison: null,
    };

    // The file of each output, by client name: worked out once, only when outputs are saved or compared (a clash is an error only then).
    let fileNames: Map<string, string> | undefined;
    const fileOf = (name: string): string => (fileNames ??= outputFileNames([...outputs.values()].map((t) => client(t.name)))).get(name) ?? outputFileName(name);

    if (flags.saveOutputs !== undefined) {
      const dir = resolve(io.cwd, flags.saveOutputs);
      const files = [...outputs.values()].map((t) => ({ path: join(dir, fileOf(client(t.name))), content: writeNpy(t) }));
      await writeFilesAtomically(files, { force: flags.force });
    }

    let mismatch = false;
    if (flags.expect !== undefined) {
      const path = resolve(io.cwd, flags.expect);
      const comparisons: (Comparison & { name: string; atol: number; rtol: number; note?: string })[] = [];
      const single = path.endsWith('.npy');
      if (single && outputs.size !== 1) throw usage(`--expect ${flags.expect} is one .npy file, but the model has ${outputs.size} outputs`, 'give a directory with NAME.npy per output');
      for (const t of outputs.values()) {
        const name = client(t.name);
        const file = single ? path : join(path, fileOf(name));
        const bytes = await readRegularFile(file, { what: `the expected values of output "${name}"`, limit: FILE_LIMITS.input }).catch((error: unknown) => {
          if (isNotFound(error)) {
            throw new PopefError(ErrorCode.Io, `no expected values for output "${name}"`, { file, suggestion: 'save them with popef run --save-outputs' });
          }
          throw error;
        });
        const expected = readNpy(bytes, file);
        const a = atol.by.get(name) ?? atol.by.get(t.name) ?? atol.all;
        const r = rtol.by.get(name) ?? rtol.by.get(t.name) ?? rtol.all;
        const sameShape = expected.shape.length === t.shape.length && expected.shape.every((d, i) => d === t.shape[i]);
        const c = compareValues(toNumbers(t), toNumbers(expected), { atol: a, rtol: r });
        const entry = sameShape ? { ...c, name, atol: a, rtol: r } : { ...c, passed: false, name, atol: a, rtol: r, note: `shape [${t.shape.join(', ')}] differs from the expected [${expected.shape.join(', ')}]` };
        if (!entry.passed) mismatch = true;
        comparisons.push(entry);
      }
      report.comparison = comparisons;
    }

    if (reference !== undefined) {
      // The same inputs through the second plugin; its outputs play the expected values.
      const other = await reference.open({ files: target.files, executable, options: pluginOptions, tensors });
      const theirs = await other.run(inputs);
      await other.close();
      const comparisons: (Comparison & { name: string; atol: number; rtol: number; note?: string })[] = [];
      for (const t of outputs.values()) {
        const name = client(t.name);
        const expected = theirs.get(t.name);
        const a = atol.by.get(name) ?? atol.by.get(t.name) ?? atol.all;
        const r = rtol.by.get(name) ?? rtol.by.get(t.name) ?? rtol.all;
        if (expected === undefined) {
          comparisons.push({ ...compareValues([], [], { atol: a, rtol: r }), passed: false, name, atol: a, rtol: r, note: `plugin "${reference.name}" gave no output "${t.name}"` });
          mismatch = true;
          continue;
        }
        const c = compareValues(toNumbers(t), toNumbers(expected), { atol: a, rtol: r });
        if (!c.passed) mismatch = true;
        comparisons.push({ ...c, name, atol: a, rtol: r });
      }
      report.comparison = comparisons;
      report.comparedWith = reference.name;
    }

    if (flags.json === true) io.stdout(`${JSON.stringify(report, (_, v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? String(v) : v), 2)}\n`);
    else io.stdout(renderRunText(report, await chooseColour({ flag: flags.color, env: io.env, isTTY: io.stdoutIsTTY }), io.stdoutColumns));
    return mismatch ? ExitCode.Findings : ExitCode.Ok;
  } finally {
    await plugin.dispose();
    await reference?.dispose();
  }
}
