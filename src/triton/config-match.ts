import type { ModelConfig } from './model-config.js';
import { quote, scalarText } from './pbtxt-printer.js';
import { ENUMS, fieldsOf, isEnumName, isMessageName, type FieldSpec, type MessageName } from './schema.js';

/**
 * Whether an existing config.pbtxt can serve a new PopEF as it is: the test
 * scaffold applies before adding a version beside others.
 *
 * The comparison is of parsed messages, not text: comments, layout, field
 * order and fields written at their default value (proto3 has no presence
 * for scalars) do not count. Only what the PopEF and scaffold's options
 * decide is compared: name, backend, max_batch_size, the inputs and outputs
 * (matched by name, as Triton matches them), and dynamic_batching and
 * parameters when the new config has them (they come from options the user
 * gave). Within those, a field the new config leaves out is the user's to
 * set (label_filename, optional, ...); everything else in config.pbtxt
 * (version_policy, instance_group, model_warmup, ...) is the user's serving
 * choice and is kept as it is.
 */

/** One field where the config on disk and the one the new PopEF needs disagree. */
export interface ConfigDifference {
  /** The field as a user finds it in config.pbtxt: `max_batch_size`, `input "x" dims`, `dynamic_batching.preferred_batch_size`. */
  readonly field: string;
  /** Its value in the existing config, written as in config.pbtxt; `(unset)` when absent, `(none)` for a tensor it does not have. */
  readonly existing: string;
  /** Its value in the config the new PopEF needs. */
  readonly needed: string;
}

type Plain = Record<string, unknown>;

const UNSET = '(unset)';
/** A tensor one side does not have at all. */
const NONE = '(none)';

function isPlain(value: unknown): value is Plain {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The value proto3 reads for an absent scalar or enum of type `t`. */
function defaultOf(t: string): unknown {
  if (t === 'string') return '';
  if (t === 'bool') return false;
  if (isEnumName(t)) return ENUMS[t][0];
  return 0;
}

/** A value of a field as config.pbtxt writes it, on one line. */
function show(value: unknown, spec: FieldSpec): string {
  if (value === undefined) return UNSET;
  if (Array.isArray(value)) return `[ ${value.map((v) => showOne(v, spec.t)).join(', ')} ]`;
  return showOne(value, spec.t);
}

function showOne(value: unknown, t: string): string {
  if (!isMessageName(t) || !isPlain(value)) return scalarText(t, value);
  const parts = Object.entries(fieldsOf(t)).flatMap(([key, spec]) => (value[key] === undefined ? [] : [`${key}: ${show(value[key], spec)}`]));
  return parts.length === 0 ? '{ }' : `{ ${parts.join(' ')} }`;
}

/** `input "x"` + `dims` reads `input "x" dims`; a message field + `shape` reads `reshape.shape`. */
function label(parent: string, key: string): string {
  if (parent === '') return key;
  return parent.endsWith('"') ? `${parent} ${key}` : `${parent}.${key}`;
}

function differ(out: ConfigDifference[], field: string, spec: FieldSpec, existing: unknown, needed: unknown): void {
  out.push({ field, existing: show(existing, spec), needed: show(needed, spec) });
}

/** Compares one field the new config sets; see the comment at the top for what counts. */
function compareField(out: ConfigDifference[], field: string, spec: FieldSpec, existing: unknown, needed: unknown): void {
  if (spec.map !== undefined) return compareMap(out, field, spec, existing, needed);
  if (spec.repeated === true) return compareList(out, field, spec, existing, needed);
  if (isMessageName(spec.t)) {
    // A message is there or not (dynamic_batching {} switches batching on): absence differs from an empty one.
    if (isPlain(existing) && isPlain(needed)) return compareMessage(out, field, spec.t, existing, needed);
    if (existing !== needed) differ(out, field, spec, existing, needed);
    return;
  }
  const fallback = defaultOf(spec.t);
  if (scalarText(spec.t, existing ?? fallback) !== scalarText(spec.t, needed ?? fallback)) differ(out, field, spec, existing, needed);
}

function compareList(out: ConfigDifference[], field: string, spec: FieldSpec, existing: unknown, needed: unknown): void {
  const have = Array.isArray(existing) ? (existing as unknown[]) : [];
  const want = Array.isArray(needed) ? (needed as unknown[]) : [];
  const t = spec.t;
  if (isMessageName(t) && have.length === want.length) {
    want.forEach((w, i) => compareField(out, `${field}[${i}]`, { n: spec.n, t }, have[i], w));
    return;
  }
  if (have.length !== want.length || have.some((h, i) => showOne(h, t) !== showOne(want[i], t)))
    differ(out, field, spec, have.length === 0 ? undefined : have, want);
}

/** Map entries the new config needs must be there with the same value; other keys are the user's. */
function compareMap(out: ConfigDifference[], field: string, spec: FieldSpec, existing: unknown, needed: unknown): void {
  const have = Array.isArray(existing) ? (existing as unknown[]).filter(isPlain) : [];
  for (const entry of Array.isArray(needed) ? (needed as unknown[]).filter(isPlain) : []) {
    const key = String(entry.key);
    // The last entry of a key wins, as protobuf merges a map.
    const current = have.filter((e) => String(e.key) === key).at(-1);
    compareField(out, `${field} ${quote(key)}`, { n: spec.n, t: spec.t }, current?.value, entry.value);
  }
}

function compareMessage(out: ConfigDifference[], field: string, type: MessageName, existing: Plain, needed: Plain): void {
  for (const [key, spec] of Object.entries(fieldsOf(type))) {
    // A field the new config leaves out is the user's to set.
    if (needed[key] !== undefined) compareField(out, label(field, key), spec, existing[key], needed[key]);
  }
}

/** Inputs or outputs, matched by name as Triton matches a request's tensors: their order in the file does not matter. */
function compareTensors(
  out: ConfigDifference[],
  kind: 'input' | 'output',
  existing: readonly Plain[] | undefined,
  needed: readonly Plain[] | undefined,
): void {
  const type = kind === 'input' ? 'inference.ModelInput' : 'inference.ModelOutput';
  const whole: FieldSpec = { n: 0, t: type };
  const have = existing ?? [];
  const want = needed ?? [];
  const nameOf = (t: Plain): string => (typeof t.name === 'string' ? t.name : '');
  for (const w of want) {
    const field = `${kind} ${quote(nameOf(w))}`;
    const h = have.find((e) => nameOf(e) === nameOf(w));
    if (h === undefined) out.push({ field, existing: NONE, needed: show(w, whole) });
    else compareMessage(out, field, type, h, w);
  }
  for (const h of have) {
    if (!want.some((w) => nameOf(w) === nameOf(h))) out.push({ field: `${kind} ${quote(nameOf(h))}`, existing: show(h, whole), needed: NONE });
  }
}

/**
 * Where `existing` (config.pbtxt on disk) and `needed` (the config scaffold
 * generated for the new PopEF) disagree, in config order; empty when the
 * existing config serves the new PopEF as it is. `model` is the directory
 * name, which Triton gives a config without `name`.
 */
export function configDifferences(existing: ModelConfig, needed: ModelConfig, model: string): ConfigDifference[] {
  const out: ConfigDifference[] = [];
  const spec = fieldsOf('inference.ModelConfig');
  const named = (name: string | undefined): string => (name === undefined || name === '' ? model : name);
  compareField(out, 'name', spec.name ?? { n: 1, t: 'string' }, named(existing.name), named(needed.name));
  for (const key of ['backend', 'max_batch_size'] as const) {
    const s = spec[key];
    if (s !== undefined) compareField(out, key, s, existing[key], needed[key]);
  }
  compareTensors(out, 'input', existing.input, needed.input);
  compareTensors(out, 'output', existing.output, needed.output);
  // Set only by options given to this run (--dynamic-batching, --parameter): compared when given.
  for (const key of ['dynamic_batching', 'parameters'] as const) {
    const s = spec[key];
    if (s !== undefined && needed[key] !== undefined) compareField(out, key, s, existing[key], needed[key]);
  }
  return out;
}
