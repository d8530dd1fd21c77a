import type { ModelConfig } from '../model-config.js';
import type { FileProbe } from './file-rules.js';
import { dataTypeByteSize, elementCount } from './io-rules.js';
import type { RawFinding } from './findings.js';

/**
 * The sequence batcher's implicit state (sequence_batching.state), as
 * Triton checks it when it creates the scheduler (core r24.10,
 * src/sequence_batch_scheduler/sequence_batch_scheduler.cc,
 * SequenceBatchScheduler::Create and GenerateInitialStateData): at most one
 * initial_state per state, of the state's data type, named, for a state
 * input given once, with the state's dims (no variable ones) and a data
 * source that holds enough bytes.
 *
 * Triton stops at the first state that fails; each state is a cause of its
 * own, so this gives each failing state's first failure.
 */

/** The folder of a model directory Triton reads initial_state data files from (kInitialStateFolder). */
export const INITIAL_STATE_FOLDER = 'initial_state';

/** The data files the initial states name, relative to the model directory. */
export function initialStateFiles(config: ModelConfig): string[] {
  const files: string[] = [];
  for (const s of config.sequence_batching?.state ?? []) {
    for (const i of s.initial_state ?? []) if (i.data_file !== undefined) files.push(`${INITIAL_STATE_FOLDER}/${i.data_file}`);
  }
  return files;
}

/**
 * `join` is Triton's JoinPath (the path is printed as Triton builds it);
 * `probeOf` gives a file's size or error by its path relative to the model directory.
 */
export function checkImplicitState(
  config: ModelConfig,
  modelPath: string,
  join: (...segments: string[]) => string,
  probeOf: (relative: string) => FileProbe,
): RawFinding[] {
  const sb = config.sequence_batching;
  if (sb === undefined) return [];
  const out: RawFinding[] = [];
  const withInitial = new Set<string>();
  (sb.state ?? []).forEach((state, si) => {
    const name = state.input_name ?? '';
    const at = `sequence_batching.state[${si}]`;
    const fail = (message: string, hint: string): void => {
      out.push({ rule: 'config/implicit-state', message, path: at, hint });
    };
    const initials = state.initial_state ?? [];
    if (initials.length > 1) {
      fail(
        `initial_state field for state input '${name}' must contain exactly one or zero element. Found '${initials.length}' elements.`,
        'keep one initial_state',
      );
      return;
    }
    const initial = initials[0];
    if (initial === undefined) return;
    if ((initial.data_type ?? 'TYPE_INVALID') !== (state.data_type ?? 'TYPE_INVALID')) {
      fail(
        `The data type used for 'initial_state' field of state '${name}' does not match the state data type.`,
        `give the initial_state data_type: ${String(state.data_type ?? '')}`,
      );
      return;
    }
    if ((initial.name ?? '') === '') {
      fail(`Field 'name' must be set when using initial_state for state input '${name}'.`, 'name the initial state');
      return;
    }
    if (withInitial.has(name)) {
      fail(`State input name '${name}' specified more than once.`, 'give each state its own input_name');
      return;
    }
    const dims = (initial.dims ?? []).map(Number);
    const stateDims = (state.dims ?? []).map(Number);
    if (dims.length !== stateDims.length) {
      fail(
        `Number of dimensions in 'initial_state' doesn't match the size of 'state' dimensions for state input '${name}'. ${dims.length} != ${stateDims.length}`,
        `give the initial state the state's ${stateDims.length} dims`,
      );
      return;
    }
    withInitial.add(name);
    for (const [i, d] of dims.entries()) {
      const s = stateDims[i] ?? -1;
      if (d === -1) {
        fail(`'initial_state' field for state input name '${name}' contains variable dimensions.`, 'give the initial state fixed dims');
        return;
      }
      if (s !== -1 && d !== s) {
        fail(
          `'initial_state' dim for input name '${name}' doesn't match 'state' dim description. ${d} != ${s}`,
          "give the initial state the state's dims",
        );
        return;
      }
    }
    // The batch dimension is not part of the data.
    const count = elementCount(dims);
    const elementBytes = dataTypeByteSize(initial.data_type);
    const bytes = elementBytes === 0 ? count * 4 : count * elementBytes;
    if (initial.zero_data !== undefined) return;
    if (initial.data_file !== undefined) {
      const relative = `${INITIAL_STATE_FOLDER}/${initial.data_file}`;
      const p = probeOf(relative);
      if ('error' in p) {
        fail(
          `failed to open text file for read ${join(modelPath, INITIAL_STATE_FOLDER, initial.data_file)}: ${p.error}`,
          `put the data at ${relative} in the model directory`,
        );
      } else if (initial.data_type !== 'TYPE_STRING' && bytes > p.size) {
        fail(
          `initial_state setting expects ${bytes} bytes, but the data provided from ${initial.data_file}only has ${p.size} bytes.`,
          `the file must hold at least ${bytes} bytes`,
        );
      }
      return;
    }
    fail(`initial_state setting expects state'${name}' to have state_data set`, 'set zero_data: true or data_file');
  });
  return out;
}
