import { invalidArg, RequestError } from './status.js';

/**
 * Triton's trace settings, global and per model, as its TraceManager keeps
 * them (server r24.10, src/tracer.cc UpdateTraceSettingInternal and
 * GetTraceSetting; the request checks of http_server.cc HandleTrace and
 * grpc_server.cc RegisterTrace): a model's setting names the fields it
 * sets and takes the others from the global setting, which takes its
 * unset fields from the start-up defaults.
 *
 * popef serve writes no trace: it has no --trace-config, so, as Triton
 * started without a trace file, every level but OFF is refused
 * ("trace file name is not given"), and the settings are only kept and
 * reported.
 */

/** TRITONSERVER_InferenceTraceLevel's bits (tritonserver.h): 0 is OFF. */
const TIMESTAMPS = 0x4;
const TENSORS = 0x8;

/** TraceManager::MIN_TRACE_COUNT_VALUE: -1 traces without a limit. */
const MIN_TRACE_COUNT = -1;
const INT32_MAX = 2 ** 31 - 1;
const UINT32_MAX = 2 ** 32 - 1;

interface Fields {
  readonly level: number;
  readonly rate: number;
  readonly count: number;
  readonly logFrequency: number;
  readonly file: string;
}

/** A setting and which of its fields were set at its own level (TraceSetting's *_specified_). */
interface Setting extends Fields {
  readonly specified: ReadonlySet<keyof Fields>;
}

/** One field of an update: a value, `null` to clear it (fall back), absent to keep it. */
type Change = { readonly [K in Exclude<keyof Fields, 'file'>]?: number | null };

/**
 * How a transport hands an update's fields over, each read only when its
 * turn comes (the order of Triton's checks): `list` for trace_level,
 * `scalar` for the others; null clears a field, undefined leaves it.
 * Either may throw the transport's own type errors.
 */
export interface TraceUpdateReader {
  has(key: string): boolean;
  list(key: string): readonly unknown[] | null | undefined;
  scalar(key: string): string | null | undefined;
  /** An element of trace_level as text (the HTTP frontend reads each with IndexAsString). */
  text(value: unknown): string;
  /** gRPC writes "got: -2" after the trace_count floor, HTTP "got:-2". */
  readonly spaceBeforeCount: boolean;
}

/** The settings as Triton reports them: every value a string, trace_level a list. */
export interface TraceReport {
  readonly trace_level: readonly string[];
  readonly trace_rate: string;
  readonly trace_count: string;
  readonly log_frequency: string;
  readonly trace_file: string;
  readonly trace_mode: string;
}

const DEFAULTS: Setting = { level: 0, rate: 1000, count: -1, logFrequency: 0, file: '', specified: new Set() };

/**
 * std::stoi: leading white space, a sign, decimal digits, and whatever
 * follows ignored; no digits is invalid_argument, beyond int32 is
 * out_of_range.
 */
function stoi(text: string): number | 'invalid' | 'range' {
  const m = /^[ \t\n\v\f\r]*([+-]?\d+)/.exec(text);
  if (m?.[1] === undefined) return 'invalid';
  const value = Number(m[1]);
  if (value < -(2 ** 31) || value > INT32_MAX) return 'range';
  return value;
}

/** A field read with stoi and Triton's three messages; `low`/`high` are the range its message states. */
function parseNumber(key: string, text: string, low: number, high: number): number {
  const value = stoi(text);
  if (value === 'invalid') throw invalidArg(`Unable to parse '${key}', got: ${text}`);
  if (value === 'range') throw invalidArg(`Unable to parse '${key}', value is out of range [ ${low}, ${high} ], got: ${text}`);
  return value;
}

/** A uint32 field takes stoi's int as uint32_t does: a negative value wraps. */
function asUint32(value: number): number {
  return value >>> 0;
}

/** The change an update asks for, checked in the order and with the messages of Triton's frontends. */
function readChange(reader: TraceUpdateReader): Change {
  if (reader.has('trace_file')) throw new RequestError('UNSUPPORTED', 'trace file location can not be updated through network protocol');
  const change: { -readonly [K in keyof Change]: Change[K] } = {};
  if (reader.has('trace_level')) {
    const levels = reader.list('trace_level');
    if (levels === null) change.level = null;
    else if (levels !== undefined) {
      let level = 0;
      for (const item of levels) {
        const name = reader.text(item);
        if (name === 'OFF') {
          if (levels.length !== 1) throw invalidArg("Expect only one trace level 'OFF' is specified");
          change.level = 0;
        } else if (name === 'TIMESTAMPS' || name === 'TENSORS') {
          level |= name === 'TIMESTAMPS' ? TIMESTAMPS : TENSORS;
          change.level = level;
        }
        // Any other name is skipped, as Triton skips it.
      }
    }
  }
  const scalar = (key: string, read: (text: string) => number): number | null | undefined => {
    if (!reader.has(key)) return undefined;
    const text = reader.scalar(key);
    return text === null || text === undefined ? text : read(text);
  };
  const rate = scalar('trace_rate', (t) => asUint32(parseNumber('trace_rate', t, 0, UINT32_MAX)));
  if (rate !== undefined) change.rate = rate;
  const count = scalar('trace_count', (t) => {
    const value = parseNumber('trace_count', t, MIN_TRACE_COUNT, INT32_MAX);
    if (value < MIN_TRACE_COUNT)
      throw invalidArg(`Unable to parse 'trace_count'. Expecting value >= ${MIN_TRACE_COUNT}, got:${reader.spaceBeforeCount ? ' ' : ''}${t}`);
    return value;
  });
  if (count !== undefined) change.count = count;
  const frequency = scalar('log_frequency', (t) => asUint32(parseNumber('log_frequency', t, 0, UINT32_MAX)));
  if (frequency !== undefined) change.logFrequency = frequency;
  return change;
}

/** Why a setting cannot trace (TraceSetting's constructor and Valid()); '' when it can. */
function invalidReason(s: Fields): string | undefined {
  if (s.level === 0) return 'tracing is disabled';
  if (s.rate === 0) return 'sample rate must be non-zero';
  if (s.file === '') return 'trace file name is not given';
  return s.count === 0 ? '' : undefined;
}

const FIELDS: readonly (keyof Change)[] = ['level', 'rate', 'count', 'logFrequency'];

export class TraceSettings {
  private readonly defaults: Setting = DEFAULTS;
  private global: Setting = DEFAULTS;
  private readonly models = new Map<string, Setting>();
  /** Models whose setting takes some fields from the global one (TraceManager's fallback_used_models_). */
  private readonly fallbackUsers = new Set<string>();

  /** Applies an update (model '' for the global setting); throws Triton's error and changes nothing on a bad one. */
  update(model: string, reader: TraceUpdateReader): void {
    this.apply(model, readChange(reader));
    // A global change reaches the models that take fields from it.
    if (model === '') for (const name of [...this.fallbackUsers]) this.apply(name, {});
  }

  report(model: string): TraceReport {
    const s = this.models.get(model) ?? this.global;
    const level = s.level === 0 ? ['OFF'] : [...(s.level & TIMESTAMPS ? ['TIMESTAMPS'] : []), ...(s.level & TENSORS ? ['TENSORS'] : [])];
    return {
      trace_level: level,
      trace_rate: String(s.rate),
      trace_count: String(s.count),
      log_frequency: String(s.logFrequency),
      trace_file: s.file,
      trace_mode: 'triton',
    };
  }

  private apply(model: string, change: Change): void {
    const current = model === '' ? this.global : this.models.get(model);
    const fallback = model === '' ? this.defaults : this.global;
    const specified = new Set<keyof Fields>();
    const next: { -readonly [K in keyof Fields]: Fields[K] } = { ...fallback };
    for (const field of FIELDS) {
      const asked = change[field];
      if (asked === null) continue;
      if (asked !== undefined) {
        next[field] = asked;
        specified.add(field);
      } else if (current?.specified.has(field) === true) {
        next[field] = current[field];
        specified.add(field);
      }
    }
    if (model !== '') {
      // The trace file cannot be set per model here (no --trace-config), so a model never sets every field.
      if (specified.size === 0) {
        this.models.delete(model);
        this.fallbackUsers.delete(model);
        return;
      }
      this.fallbackUsers.add(model);
    }
    const reason = invalidReason(next);
    if (reason !== undefined && next.level !== 0) throw invalidArg(`Attempting to set invalid trace setting :${reason}`);
    const setting: Setting = { ...next, specified };
    if (model === '') this.global = setting;
    else this.models.set(model, setting);
  }
}
