import type { DataType } from '../schema/model.js';
import { ErrorCode, PopefError } from '../errors.js';

/**
 * The execution plugin API. `popef run` never executes a model itself: a
 * plugin does. In-process plugins are ES modules whose default export (or
 * `createPlugin()`) returns an ExecutionPlugin; out-of-process plugins speak
 * the stdio protocol of PROTOCOL.md and are wrapped by ChildProcessPlugin.
 */

/** A tensor's name, element type (PopEF names) and full shape (batch dimension included). */
export interface TensorSpec {
  readonly name: string;
  readonly dtype: DataType;
  readonly shape: readonly number[];
}

/** A tensor with its bytes: little-endian elements in row-major order. */
export interface Tensor extends TensorSpec {
  readonly data: Uint8Array;
}

/** Whether a plugin can run on this machine (ExecutionPlugin.probe). */
export interface Availability {
  readonly available: boolean;
  /** Why not, when not available: what is missing. */
  readonly reason?: string;
  /** How to make it available. */
  readonly hint?: string;
}

/** What a plugin gets to open: the model set's files and the executable to run. */
export interface ModelRequest {
  /** Absolute paths of the PopEF open-layout files of the model set. */
  readonly files: readonly string[];
  /** Name of the executable to run (the only one, or the one chosen). */
  readonly executable: string;
  /** Plugin-specific options (--plugin-option KEY=VALUE). */
  readonly options: Readonly<Record<string, string>>;
  /**
   * The model's user-provided tensors, when the caller has read the files
   * already (popef run and popef serve have). Every plugin is checked
   * against them (src/run/guarded-plugin.ts), which otherwise reads the
   * files again: about a second over 1,000,000 anchors, for each instance
   * `popef serve` opens. They must be what the files hold. A plugin may use
   * them too.
   */
  readonly tensors?: ModelTensors;
}

/** A model's user-provided tensors, by anchor name (userTensorSpecs). */
export interface ModelTensors {
  readonly inputs: readonly TensorSpec[];
  readonly outputs: readonly TensorSpec[];
}

/** Options of one OpenedModel.run. */
export interface RunOptions {
  /**
   * Buffers the caller lends for the outputs, by anchor name (a timed loop
   * lends the previous run's). A plugin may receive an output into the
   * buffer of its name when the byte count matches, and return that buffer
   * as the output's data; or ignore them. Until run() settles the caller
   * neither reads nor reuses them. Fresh memory costs a page fault per
   * 4 KiB on first write: a 64 MiB output received into a lent buffer is
   * more than twice as fast.
   */
  readonly into?: ReadonlyMap<string, Uint8Array>;
}

/** A model a plugin has loaded, ready to run. */
export interface OpenedModel {
  /** The tensors `run` expects, by PopEF anchor name. */
  readonly inputs: readonly TensorSpec[];
  /** The tensors `run` returns. */
  readonly outputs: readonly TensorSpec[];
  /** Runs once; inputs and outputs are keyed by anchor name. */
  run(inputs: ReadonlyMap<string, Tensor>, options?: RunOptions): Promise<Map<string, Tensor>>;
  /**
   * How many run() calls may be outstanding at once (default 1: a caller
   * such as popef serve queues the rest). A plugin that executes its runs
   * one after another itself may take more, so that no time is lost
   * between one run's end and the next one's start.
   */
  readonly maxOutstandingRuns?: number;
  /** Unloads the model. */
  close(): Promise<void>;
}

/** What runs models for `popef run` and `popef serve`: in process, or a child process behind ChildProcessPlugin. */
export interface ExecutionPlugin {
  readonly name: string;
  /** Whether this plugin can run here, and if not, why and how to fix it. Never throws for a missing runtime. */
  probe(): Promise<Availability>;
  /** Loads a model. */
  open(model: ModelRequest): Promise<OpenedModel>;
  /** Releases everything (child processes included). Safe to call more than once. */
  dispose(): Promise<void>;
}

/** The one message for a plugin that cannot run here, with what is missing and how to enable it; `subject` is `plugin "ipu"` or `the SDK bridge`. */
export function cannotRunHere(subject: string, availability: Availability): PopefError {
  return new PopefError(ErrorCode.PluginUnavailable, `${subject} cannot run here: ${availability.reason ?? 'no reason given'}`, {
    suggestion: availability.hint,
  });
}

/** Probes `plugin` and throws `cannotRunHere` unless it can run here. */
export async function requireAvailable(plugin: ExecutionPlugin, subject = `plugin "${plugin.name}"`): Promise<void> {
  const availability = await plugin.probe();
  if (!availability.available) throw cannotRunHere(subject, availability);
}
