import type { DataType } from '../../schema/model.js';
import type { Tensor } from '../../run/plugin-api.js';
import type { ModelConfig } from '../../triton/model-config.js';

/**
 * What a model's sequence_batching asks of the sequence batcher, and the
 * control tensors it gives the plugin, as Triton core (r24.10,
 * sequence_batch_scheduler.cc: CreateBooleanControlTensors,
 * CreateCorrelationIDControl, SetControlTensors) gives them to a backend:
 * each control is one element per request (shape [1], [1, 1] with a batch
 * dimension), holding the control's false or true value, or the request's
 * correlation id. A control is not a config input: the plugin takes it as
 * an input of its own, under the control's name (after name_map.json).
 */

/** Triton's SequenceId: a uint64 or a string; 0 and '' mean none. */
export type CorrelationId = bigint | string;

export type BooleanControlKind = 'CONTROL_SEQUENCE_START' | 'CONTROL_SEQUENCE_END' | 'CONTROL_SEQUENCE_READY';

export interface BooleanControl {
  readonly kind: BooleanControlKind;
  /** The control's tensor name in config.pbtxt. */
  readonly name: string;
  readonly dtype: 'S32' | 'F32' | 'BOOL';
  readonly falseValue: number;
  readonly trueValue: number;
}

export interface CorrelationControl {
  readonly kind: 'CONTROL_SEQUENCE_CORRID';
  readonly name: string;
  readonly dtype: 'U64' | 'S64' | 'U32' | 'S32';
}

export type SequenceControl = BooleanControl | CorrelationControl;

export interface SequenceSettings {
  /** max_sequence_idle_microseconds (Triton's default when 0 or unset: 1 s). */
  readonly idleUs: number;
  /** The direct strategy's max_queue_delay_microseconds and minimum_slot_utilization (0: a batch goes at once). */
  readonly maxQueueDelayUs: number;
  readonly minimumSlotUtilization: number;
  readonly controls: readonly SequenceControl[];
  /** The oldest strategy (undefined: direct). */
  readonly oldest?: OldestSettings;
}

/** sequence_batching.oldest, normalised as Triton's NormalizeModelConfig does (no preferred size: max_batch_size). */
export interface OldestSettings {
  /** Slots per instance: max_candidate_sequences, or max(1, max_batch_size) when 0. */
  readonly candidates: number;
  readonly preferredBatchSizes: readonly number[];
  readonly maxQueueDelayUs: number;
}

/** Triton's default max_sequence_idle_microseconds (model_config_utils.cc, NormalizeModelConfig). */
export const DEFAULT_IDLE_US = 1_000_000;

const CORRID_TYPES: Readonly<Record<string, CorrelationControl['dtype']>> = {
  TYPE_UINT64: 'U64',
  TYPE_INT64: 'S64',
  TYPE_UINT32: 'U32',
  TYPE_INT32: 'S32',
};

/**
 * The model's sequence settings, or why popef serve cannot serve it: the
 * parts of Triton's sequence batcher not implemented here are refused at
 * load rather than served differently.
 */
export function sequenceSettings(config: ModelConfig): SequenceSettings | string {
  const sb = config.sequence_batching ?? {};
  const model = config.name ?? '';
  const refuse = (what: string, note = ''): string => `popef serve does not implement ${what} of Triton's sequence batcher (model '${model}')${note}`;
  if ((sb.state ?? []).length > 0) return refuse('implicit state (sequence_batching.state)');
  if (sb.iterative_sequence === true) return refuse('iterative sequences (sequence_batching.iterative_sequence)');
  const controls: SequenceControl[] = [];
  for (const input of sb.control_input ?? []) {
    const name = input.name ?? '';
    for (const control of input.control ?? []) {
      const kind = control.kind ?? 'CONTROL_SEQUENCE_START';
      if (kind === 'CONTROL_SEQUENCE_CORRID') {
        const dtype = CORRID_TYPES[String(control.data_type ?? '')];
        // A Poplar executable has no string tensors: a TYPE_STRING id control cannot reach it.
        if (dtype === undefined) return refuse(`a CONTROL_SEQUENCE_CORRID control of ${String(control.data_type ?? 'TYPE_INVALID')}`);
        controls.push({ kind, name, dtype });
      } else if (typeof kind === 'string') {
        const pair = booleanValues(control);
        if (pair === undefined) return refuse(`a ${kind} control without two false/true values`);
        controls.push({ kind, name, ...pair });
      }
    }
  }
  const direct = sb.direct ?? {};
  const idle = Number(sb.max_sequence_idle_microseconds ?? 0);
  const maxBatchSize = config.max_batch_size ?? 0;
  const oldest = sb.oldest;
  const preferred = [...new Set((oldest?.preferred_batch_size ?? []).map(Number))].sort((a, b) => a - b);
  if (preferred.length === 0 && maxBatchSize > 0) preferred.push(maxBatchSize);
  return {
    idleUs: idle > 0 ? idle : DEFAULT_IDLE_US,
    maxQueueDelayUs: Number(direct.max_queue_delay_microseconds ?? 0),
    minimumSlotUtilization: direct.minimum_slot_utilization ?? 0,
    controls,
    ...(oldest === undefined
      ? {}
      : {
          oldest: {
            candidates: (oldest.max_candidate_sequences ?? 0) > 0 ? Number(oldest.max_candidate_sequences) : Math.max(1, maxBatchSize),
            preferredBatchSizes: preferred,
            maxQueueDelayUs: Number(oldest.max_queue_delay_microseconds ?? 0),
          },
        }),
  };
}

type ControlMessage = NonNullable<NonNullable<NonNullable<ModelConfig['sequence_batching']>['control_input']>[number]['control']>[number];

/** The control's data type and false/true values (GetBooleanSequenceControlProperties). */
function booleanValues(control: ControlMessage): Pick<BooleanControl, 'dtype' | 'falseValue' | 'trueValue'> | undefined {
  const [i32, f32, b] = [control.int32_false_true ?? [], control.fp32_false_true ?? [], control.bool_false_true ?? []];
  if (i32.length === 2) return { dtype: 'S32', falseValue: Number(i32[0]), trueValue: Number(i32[1]) };
  if (f32.length === 2) return { dtype: 'F32', falseValue: Number(f32[0]), trueValue: Number(f32[1]) };
  if (b.length === 2) return { dtype: 'BOOL', falseValue: b[0] === true ? 1 : 0, trueValue: b[1] === true ? 1 : 0 };
  return undefined;
}

/** Which of Triton's override sets a request gets: its flags, or not-ready (a slot with no request in the batch). */
export interface ControlState {
  readonly start: boolean;
  readonly end: boolean;
  readonly ready: boolean;
}

export const NOT_READY: ControlState = { start: false, end: false, ready: false };

function element(dtype: DataType, value: number | bigint): Uint8Array {
  const bytes = new Uint8Array(dtype === 'U64' || dtype === 'S64' ? 8 : dtype === 'BOOL' ? 1 : 4);
  const view = new DataView(bytes.buffer);
  if (dtype === 'F32') view.setFloat32(0, Number(value), true);
  else if (dtype === 'S32' || dtype === 'U32') view.setUint32(0, Number(BigInt.asUintN(32, BigInt(value))), true);
  else if (dtype === 'U64' || dtype === 'S64') view.setBigUint64(0, BigInt.asUintN(64, BigInt(value)), true);
  else bytes[0] = Number(value) === 0 ? 0 : 1;
  return bytes;
}

/**
 * One request's control tensors, by anchor. START is true on a start, END
 * on an end, READY on every request (all false for a not-ready slot); the
 * CORRID control holds the id's low bytes as its type is wide, as Triton
 * copies them (0 for a not-ready slot).
 */
export function controlTensors(
  controls: readonly SequenceControl[],
  anchorOf: (name: string) => string,
  state: ControlState,
  id: bigint,
  batched: boolean,
): Map<string, Tensor> {
  const out = new Map<string, Tensor>();
  const shape = batched ? [1, 1] : [1];
  for (const c of controls) {
    const anchor = anchorOf(c.name);
    let data: Uint8Array;
    if (c.kind === 'CONTROL_SEQUENCE_CORRID') data = element(c.dtype, state.ready ? id : 0n);
    else {
      const on = c.kind === 'CONTROL_SEQUENCE_START' ? state.start : c.kind === 'CONTROL_SEQUENCE_END' ? state.end : state.ready;
      data = element(c.dtype, on ? c.trueValue : c.falseValue);
    }
    out.set(anchor, { name: anchor, dtype: c.dtype, shape, data });
  }
  return out;
}
