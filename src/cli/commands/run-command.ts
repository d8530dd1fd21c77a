import { join, resolve } from 'node:path';
import { ModelSet } from '../../format/model-set.js';
import { chooseColour } from '../../present/colour.js';
import { progressLine } from '../../present/progress.js';
import { renderRunText } from '../../present/run-report.js';
import { compareOutputs, type OutputComparison, type OutputTolerance, type OutputTolerances } from '../../run/compare.js';
import { loadPlugin, type PluginContext } from '../../run/load-plugin.js';
import { runTimed, type TimedRun } from '../../run/measure.js';
import { resolveTarget, type ModelTarget } from '../../run/model-target.js';
import { type ExecutionPlugin, type ModelRequest, type ModelTensors, type OpenedModel, type Tensor } from '../../run/plugin-api.js';
import { runReport, type RunReport } from '../../run/run-report.js';
import { modelTensorSpecs } from '../../run/tensor.js';
import { bindInputs, type InputBinding } from '../../run/tensor-io/inputs.js';
import { outputFiles, readExpected, saveOutputs } from '../../run/tensor-io/output-files.js';
import { VERSION } from '../../version.js';
import { ExitCode } from '../exit-codes.js';
import type { CliIo } from '../io.js';
import { pluginOptions, positiveSecondsMs, usage } from './options.js';
import { assertAvailable, defaultPlugin } from './plugin-choice.js';
import type { RunFlags } from './run.js';
import { sourceGraphBlob } from '../../run/source-graph.js';

export async function runCommand(modelArgs: string[], flags: RunFlags, io: CliIo): Promise<number> {
  const plan = parseRunFlags(flags, io.cwd);
  const target = await resolveTarget(modelArgs, io.cwd, flags.version);
  const { request, hasGraph } = await modelRequest(target, flags, plan.pluginOptions);
  const nameOf = (anchor: string): string => target.clientNames.get(anchor) ?? anchor;
  const context = { cwd: io.cwd, env: io.env, signal: io.signal, requestTimeoutMs: plan.timeoutMs, host: `popef-toolkit ${VERSION}`, url: flags.url };
  const plugin = await pickPlugin(flags, hasGraph, context, io);
  const reference = flags.compareWith === undefined ? undefined : await loadPlugin(flags.compareWith, context);
  const models: OpenedModel[] = [];
  let finished = false;
  try {
    for (const p of [plugin, reference]) if (p !== undefined) await assertAvailable(p);
    const model = await plugin.open(request);
    models.push(model);
    const inputs = await bindInputs(model.inputs, { ...plan.binding, nameOf });
    const run = await measure(model, inputs, flags, plan.durationMs, io);
    const fileOf = outputFiles(run.outputs, nameOf);
    if (flags.saveOutputs !== undefined) await saveOutputs(run.outputs, resolve(io.cwd, flags.saveOutputs), nameOf, fileOf, flags.force);
    const expectedOf = flags.expect === undefined ? undefined : savedOutputs(resolve(io.cwd, flags.expect), flags.expect, run.outputs.size, fileOf);
    const theirs = reference === undefined ? undefined : await runOnce(reference, request, inputs, models);
    const comparisons = await compareWith(run.outputs, expectedOf ?? theirs?.expectedOf, plan.tolerances, nameOf);
    const report = runReport({
      plugin: plugin.name,
      model: target.description,
      executable: request.executable,
      inputs: model.inputs,
      outputs: model.outputs,
      run,
      warmup: flags.warmup,
      nameOf,
      topK: flags.topK,
      comparison: comparisons === undefined ? undefined : { comparisons, with: reference?.name },
    });
    await render(report, flags, io);
    finished = true;
    return comparisons?.some((c) => !c.passed) === true ? ExitCode.Findings : ExitCode.Ok;
  } finally {
    await release(models, [plugin, reference], finished);
  }
}

interface RunPlan {
  readonly timeoutMs: number;
  readonly durationMs: number | undefined;
  readonly binding: Omit<InputBinding, 'nameOf'>;
  readonly tolerances: OutputTolerances;
  readonly pluginOptions: Record<string, string>;
}

/** The flags, checked and parsed, before anything is read or started. */
function parseRunFlags(flags: RunFlags, cwd: string): RunPlan {
  const timeoutMs = positiveSecondsMs(flags.timeout, '--timeout');
  const durationMs = flags.duration === undefined ? undefined : Number(flags.duration) * 1000;
  if (durationMs !== undefined && !(durationMs > 0)) throw usage(`--duration "${flags.duration ?? ''}" is not a positive number of seconds`);
  const range = numberList(flags.range, '--range');
  if (range !== undefined && (range.length !== 2 || (range[0] ?? 0) > (range[1] ?? 0))) throw usage('--range takes LOW,HIGH with LOW <= HIGH');
  const image = { scale: numberList(flags.scale, '--scale')?.[0], mean: numberList(flags.mean, '--mean'), std: numberList(flags.std, '--std') };
  const tolerances = { atol: tolerance(flags.atol, 1e-5, '--atol'), rtol: tolerance(flags.rtol, 1e-3, '--rtol') };
  const options: Record<string, string> = {};
  if (flags.reference !== undefined) options.reference = resolve(cwd, flags.reference);
  for (const m of flags.referenceMap ?? []) {
    const at = m.indexOf('=');
    if (at <= 0) throw usage(`--reference-map "${m}" is not ANCHOR=NAME`);
    options[`map.${m.slice(0, at)}`] = m.slice(at + 1);
  }
  if (flags.expect !== undefined && flags.compareWith !== undefined)
    throw usage('--expect and --compare-with are exclusive: compare with saved outputs or with another plugin');
  pluginOptions(flags.pluginOption, options);
  const files = (flags.input ?? []).map((given) => {
    const at = given.indexOf('=');
    if (at <= 0) throw usage(`--input "${given}" is not NAME=FILE`);
    return { name: given.slice(0, at), path: resolve(cwd, given.slice(at + 1)) };
  });
  const random = flags.random === true ? { seed: flags.seed, range: range as [number, number] | undefined } : undefined;
  return { timeoutMs, durationMs, binding: { files, image, ...(random === undefined ? {} : { random }) }, tolerances, pluginOptions: options };
}

function numberList(text: string | undefined, what: string): number[] | undefined {
  if (text === undefined) return undefined;
  const values = text.split(',').map((s) => Number(s.trim()));
  if (values.length === 0 || values.some((v) => !Number.isFinite(v))) throw usage(`${what} must be numbers separated by commas, not "${text}"`);
  return values;
}

/** --atol 1e-3 --atol out=0.1 -> a default and per-output values. */
function tolerance(values: readonly string[] | undefined, fallback: number, what: string): OutputTolerance {
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

/** What every plugin is asked to open: the executable (checked here, so that plugins get a valid model set), its tensors and the plugin options. */
async function modelRequest(
  target: ModelTarget,
  flags: RunFlags,
  options: Record<string, string>,
): Promise<{ request: ModelRequest; hasGraph: boolean }> {
  const set = await ModelSet.open(target.files);
  let executable: string;
  let tensors: ModelTensors;
  // Whether the cpu plugin has a graph to run: the default plugin depends on it.
  let hasGraph: boolean;
  try {
    const chosen = set.model(flags.executable);
    executable = chosen.name;
    tensors = modelTensorSpecs(set, executable);
    hasGraph = options.reference !== undefined || sourceGraphBlob(chosen.opaques) !== undefined;
  } finally {
    await set.close();
  }
  // The triton plugin asks a server for the model by its name and client tensor names.
  if (flags.url !== undefined) options.url = flags.url;
  if (target.modelName !== undefined && !Object.hasOwn(options, 'model')) options.model = target.modelName;
  for (const [anchor, name] of target.clientNames) if (!Object.hasOwn(options, `name.${anchor}`)) options[`name.${anchor}`] = name;
  if ((flags.plugin === 'triton' || flags.compareWith === 'triton') && flags.url === undefined)
    throw usage('--plugin triton needs --url grpc://HOST:PORT or http://HOST:PORT');
  return { request: { files: target.files, executable, options, tensors }, hasGraph };
}

/** --plugin, or the default: triton with --url, the other built-in one beside --compare-with, else whichever of ipu and cpu can run here. */
async function pickPlugin(flags: RunFlags, hasGraph: boolean, context: PluginContext, io: CliIo): Promise<ExecutionPlugin> {
  if (flags.plugin !== undefined) return loadPlugin(flags.plugin, context);
  if (flags.url !== undefined) return loadPlugin('triton', context);
  if (flags.compareWith !== undefined) return loadPlugin(flags.compareWith === 'ipu' ? 'cpu' : 'ipu', context);
  const chosen = await defaultPlugin({ hasGraph }, context);
  io.stderr(`popef run: plugin ${chosen.plugin.name}: ${chosen.why} (choose with --plugin)\n`);
  return chosen.plugin;
}

/** The timed runs, with a progress line on a terminal once they take longer than a second. */
async function measure(
  model: OpenedModel,
  inputs: ReadonlyMap<string, Tensor>,
  flags: RunFlags,
  durationMs: number | undefined,
  io: CliIo,
): Promise<TimedRun> {
  const line = progressLine(io, (done, total) =>
    durationMs === undefined ? `running: ${done}/${total} runs` : `running: ${(done / 1000).toFixed(1)}/${(total / 1000).toFixed(1)} s`,
  );
  const onProgress = ({ runs, elapsedMs }: { runs: number; elapsedMs: number }): void => {
    if (elapsedMs > 1000) line.update(durationMs === undefined ? runs : elapsedMs, durationMs ?? flags.iterations);
  };
  try {
    return await runTimed(model, inputs, { warmup: flags.warmup, iterations: flags.iterations, durationMs, onProgress });
  } finally {
    line.stop();
  }
}

type ExpectedOf = (output: Tensor, name: string) => Promise<Tensor | string>;

/** --expect: DIR/NAME.npy per output, or one FILE.npy for a model of one output. */
function savedOutputs(path: string, given: string, outputs: number, fileOf: (name: string) => string): ExpectedOf {
  const single = path.endsWith('.npy');
  if (single && outputs !== 1)
    throw usage(`--expect ${given} is one .npy file, but the model has ${outputs} outputs`, 'give a directory with NAME.npy per output');
  return (_, name) => (single ? readExpected(path, name, 'file') : readExpected(join(path, fileOf(name)), name, 'directory'));
}

/** --compare-with: the same inputs through the second plugin, whose outputs play the expected values. */
async function runOnce(
  reference: ExecutionPlugin,
  request: ModelRequest,
  inputs: ReadonlyMap<string, Tensor>,
  models: OpenedModel[],
): Promise<{ expectedOf: ExpectedOf }> {
  const other = await reference.open(request);
  models.push(other);
  const theirs = await other.run(inputs);
  return { expectedOf: (t) => Promise.resolve(theirs.get(t.name) ?? `plugin "${reference.name}" gave no output "${t.name}"`) };
}

function compareWith(
  outputs: ReadonlyMap<string, Tensor>,
  expectedOf: ExpectedOf | undefined,
  tolerances: OutputTolerances,
  nameOf: (anchor: string) => string,
): Promise<OutputComparison[] | undefined> {
  return expectedOf === undefined ? Promise.resolve(undefined) : compareOutputs(outputs, expectedOf, tolerances, nameOf);
}

async function render(report: RunReport, flags: RunFlags, io: CliIo): Promise<void> {
  // JSON has no Infinity or NaN: they are written as strings (schemas/run.schema.json).
  if (flags.json === true)
    io.stdout(`${JSON.stringify(report, (_, v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? String(v) : v), 2)}\n`);
  else io.stdout(renderRunText(report, await chooseColour({ flag: flags.color, env: io.env, isTTY: io.stdoutIsTTY })));
}

/**
 * Closes every opened model and stops every plugin, however the run ended.
 * A failure to close is reported only when nothing else went wrong first
 * (`finished`): it must not hide the error that ended the run.
 */
async function release(models: readonly OpenedModel[], plugins: readonly (ExecutionPlugin | undefined)[], finished: boolean): Promise<void> {
  const closed = await Promise.allSettled(models.map((m) => m.close()));
  for (const p of plugins) await p?.dispose();
  const failed = closed.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (finished && failed !== undefined) throw failed.reason;
}
