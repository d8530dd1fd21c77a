import { ErrorCode, PopefError } from '../errors.js';
import { ModelSet } from '../format/model-set.js';
import { raceDeadline } from './deadline.js';
import { StepDeadlines } from './step-deadlines.js';
import { withExitTrapped } from './exit-trap.js';
import { sameTensorInfo } from '../schema/model.js';
import type { Availability, ExecutionPlugin, ModelRequest, ModelTensors, OpenedModel, RunOptions, Tensor, TensorSpec } from './plugin-api.js';
import { byteLength, modelTensorSpecs } from './tensor.js';

/**
 * Every plugin reaches its callers through this wrapper, because a plugin is
 * code we did not write and must not be trusted to keep the API's promises:
 *
 * - what it declares and what it returns must be the model's anchors, with
 *   their dtypes, shapes and byte counts (a plugin that returns S8 where the
 *   model says F32 [1, 10] must not make `--expect` say "pass");
 * - an exception it throws is its failure (E_PLUGIN, naming it), not a bug
 *   of ours;
 * - an in-process plugin whose promise never settles still ends at
 *   `--timeout`, and at an interrupt. (Out-of-process plugins have their own
 *   timer, which also stops the child, so they get none here.)
 */

export interface GuardOptions {
  /** Time allowed for open and each run of an in-process plugin. */
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
  /**
   * Trap process.exit while the plugin's steps run (default true). Only code
   * we did not write that runs in our process can call it; the trap's
   * AsyncLocalStorage turns on promise hooks for the whole process (Node 20),
   * a cost on every promise of every request popef serve answers, so the
   * built-in plugins and child processes go without it.
   */
  readonly trapExit?: boolean;
}

/** The step's promise: a plugin written in plain JavaScript may return a value, or throw before it returns a promise. */
function started<T>(start: () => T | Promise<T>): Promise<T> {
  try {
    return Promise.resolve(start());
  } catch (error) {
    return Promise.reject(error instanceof Error ? error : new Error(String(error)));
  }
}

function describe(s: TensorSpec): string {
  return `${s.dtype} [${s.shape.join(', ')}]`;
}

class GuardedPlugin implements ExecutionPlugin {
  /** The timeout of the steps when no interrupt is to be raced as well (popef serve's case): one timer for all. */
  private readonly deadlines: StepDeadlines | undefined;

  constructor(
    private readonly inner: ExecutionPlugin,
    private readonly options: GuardOptions,
  ) {
    if (options.timeoutMs !== undefined && options.signal === undefined) this.deadlines = new StepDeadlines(options.timeoutMs);
  }

  get name(): string {
    return this.inner.name;
  }

  /** The plugin's step, bounded by the timeout and the interrupt; its exceptions become E_PLUGIN. */
  async step<T>(what: string, start: () => Promise<T>): Promise<T> {
    const work = this.options.trapExit === false ? started(start) : withExitTrapped(this.name, what, start);
    const { timeoutMs, signal } = this.options;
    const onTimeout = (): PopefError =>
      new PopefError(ErrorCode.Timeout, `plugin "${this.name}" did not ${what} within ${(timeoutMs ?? 0) / 1000} s`, {
        suggestion: 'raise --timeout if the model really needs longer',
      });
    try {
      if (this.deadlines !== undefined) return await this.deadlines.race(work, onTimeout);
      return await raceDeadline(work, { timeoutMs, onTimeout, signal, onAbort: () => new PopefError(ErrorCode.Io, 'interrupted', {}) });
    } catch (error) {
      if (error instanceof PopefError) throw error;
      const message = error instanceof Error ? error.message : String(error);
      throw new PopefError(ErrorCode.Plugin, `plugin "${this.name}" failed to ${what}: ${message}`, {
        suggestion: "this is the plugin's error: see its documentation",
        cause: error,
      });
    }
  }

  probe(): Promise<Availability> {
    return this.step('probe', () => this.inner.probe());
  }

  async open(request: ModelRequest): Promise<OpenedModel> {
    const expected = request.tensors ?? (await modelTensors(request));
    const opened = await this.step('open the model', () => this.inner.open(request));
    try {
      checkOpened(this.name, opened);
      checkDeclared(this.name, 'inputs', opened.inputs, expected.inputs);
      checkDeclared(this.name, 'outputs', opened.outputs, expected.outputs);
    } catch (error) {
      if (typeof (opened as Partial<OpenedModel> | null)?.close === 'function') await opened.close().catch(() => undefined);
      throw error;
    }
    const step = this.step.bind(this);
    const name = this.name;
    const guarded: OpenedModel = {
      inputs: opened.inputs,
      outputs: opened.outputs,
      ...(opened.maxOutstandingRuns === undefined ? {} : { maxOutstandingRuns: opened.maxOutstandingRuns }),
      async run(inputs: ReadonlyMap<string, Tensor>, options?: RunOptions): Promise<Map<string, Tensor>> {
        const outputs = await step('run the model', () => opened.run(inputs, options));
        checkOutputs(name, outputs, opened.outputs);
        return outputs;
      },
      close: () => step('close the model', () => opened.close()),
    };
    return guarded;
  }

  dispose(): Promise<void> {
    // Disposal must happen even after an interrupt: no signal race here, only the plugin's exceptions.
    return this.inner.dispose().catch((error: unknown) => {
      throw new PopefError(ErrorCode.Plugin, `plugin "${this.name}" failed to stop: ${error instanceof Error ? error.message : String(error)}`, {
        cause: error,
      });
    });
  }
}

/** The user anchors of the requested executable: what any plugin must take and give. */
async function modelTensors(request: ModelRequest): Promise<ModelTensors> {
  const set = await ModelSet.open(request.files);
  try {
    return modelTensorSpecs(set, request.executable);
  } finally {
    await set.close();
  }
}

/** What open() returned is an opened model at all: lists of tensor specs, run and close (it is plain JavaScript's to get wrong). */
function checkOpened(plugin: string, opened: unknown): void {
  const o = opened as Partial<Record<keyof OpenedModel, unknown>> | null | undefined;
  const wrong = (what: string): PopefError =>
    new PopefError(ErrorCode.Plugin, `plugin "${plugin}" returned from open() ${what}`, {
      suggestion: 'open() resolves with { inputs, outputs, run, close } (src/run/plugin-api.ts)',
    });
  if (o === null || o === undefined) throw wrong(`${String(o)}, not an opened model`);
  for (const kind of ['inputs', 'outputs'] as const) {
    const list = o[kind];
    if (!Array.isArray(list)) throw wrong(`"${kind}" as ${list === null ? 'null' : typeof list}, not a list of tensor specs`);
    list.forEach((spec: unknown, i) => {
      const s = spec as Partial<TensorSpec> | null;
      if (typeof s?.name !== 'string' || typeof s.dtype !== 'string' || !Array.isArray(s.shape))
        throw wrong(`${kind}[${i}] that is not a tensor spec ({ name, dtype, shape })`);
    });
  }
  for (const method of ['run', 'close'] as const) if (typeof o[method] !== 'function') throw wrong(`a model without a ${method}() function`);
}

function checkDeclared(plugin: string, kind: 'inputs' | 'outputs', declared: readonly TensorSpec[], expected: readonly TensorSpec[]): void {
  const byName = new Map(expected.map((s) => [s.name, s]));
  for (const d of declared) {
    const e = byName.get(d.name);
    if (e === undefined)
      throw new PopefError(
        ErrorCode.Plugin,
        `plugin "${plugin}" declares ${kind === 'inputs' ? 'an input' : 'an output'} "${d.name}" that the model does not have`,
        {},
      );
    if (!sameTensorInfo(d, e))
      throw new PopefError(
        ErrorCode.Plugin,
        `plugin "${plugin}" declares ${kind === 'inputs' ? 'input' : 'output'} "${d.name}" as ${describe(d)}, but the model's anchor is ${describe(e)}`,
        {},
      );
    byName.delete(d.name);
  }
  const missing = [...byName.keys()];
  if (missing.length > 0)
    throw new PopefError(ErrorCode.Plugin, `plugin "${plugin}" does not declare the model's ${kind} ${missing.map((n) => `"${n}"`).join(', ')}`, {});
}

function checkOutputs(plugin: string, outputs: ReadonlyMap<string, Tensor>, specs: readonly TensorSpec[]): void {
  if (typeof (outputs as { get?: unknown } | null)?.get !== 'function')
    throw new PopefError(ErrorCode.Plugin, `plugin "${plugin}" returned something other than a Map of tensors from run()`, {});
  for (const spec of specs) {
    const t = outputs.get(spec.name);
    if (t === undefined) throw new PopefError(ErrorCode.Plugin, `plugin "${plugin}" returned no output "${spec.name}"`, {});
    if (!sameTensorInfo(t, spec))
      throw new PopefError(
        ErrorCode.Plugin,
        `plugin "${plugin}" returned output "${spec.name}" as ${describe(t)}, but the model's anchor is ${describe(spec)}`,
        {},
      );
    if (!(t.data instanceof Uint8Array) || t.data.byteLength !== byteLength(spec)) {
      throw new PopefError(
        ErrorCode.Plugin,
        `plugin "${plugin}" returned output "${spec.name}" with ${t.data instanceof Uint8Array ? t.data.byteLength : 'no'} bytes, but ${describe(spec)} needs ${byteLength(spec)}`,
        {},
      );
    }
  }
  if (outputs.size === specs.length) return;
  const known = new Set(specs.map((s) => s.name));
  for (const name of outputs.keys()) {
    if (!known.has(name)) throw new PopefError(ErrorCode.Plugin, `plugin "${plugin}" returned an output "${name}" that the model does not have`, {});
  }
}

/** Wraps a plugin so that it keeps the API's promises (see above). */
export function guardPlugin(plugin: ExecutionPlugin, options: GuardOptions = {}): ExecutionPlugin {
  return new GuardedPlugin(plugin, options);
}
