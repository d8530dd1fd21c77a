import { ErrorCode, PopefError } from '../errors.js';
import type { Message } from './model-config.js';
import { ENUMS, ENUM_VALUE_SINCE, MESSAGES, isEnumName, isMessageName, knownIn, type FieldSpec, type MessageName } from './schema.js';

/**
 * The canonical config.pbtxt printer: fields in schema (proto declaration)
 * order, one per line, two-space indentation, lists as `[ ... ]`, map
 * entries sorted by key, default-valued scalars left out (proto3 cannot tell
 * them from absent, and an explicit `optional: false` breaks servers that
 * predate the field). parsePbtxt(printPbtxt(x)) equals canonicalize(x).
 */

import { DEFAULT_TRITON_VERSION } from './triton-release.js';

export { DEFAULT_TRITON_VERSION };

/** How printPbtxt prints. */
export interface PrintOptions {
  /**
   * Refuse fields and enum values newer than this Triton release (default
   * 21.05); `latest` turns the check off.
   */
  readonly tritonVersion?: string;
}

const FIELDS = MESSAGES as unknown as Record<string, Record<string, FieldSpec>>;

function isDefaultScalar(t: string, v: unknown): boolean {
  if (isEnumName(t)) return v === ENUMS[t][0] || v === 0;
  return v === 0 || v === 0n || v === false || v === '' || v === undefined;
}

function compareKeys(a: unknown, b: unknown): number {
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0;
  const x = BigInt(a as number | bigint);
  const y = BigInt(b as number | bigint);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** The normal form the printer writes: defaults dropped, empty lists dropped, map entries sorted by key (stably). */
export function canonicalize<M extends MessageName>(type: M, message: Message<M>): Message<M> {
  return canonicalMessage(type, message) as Message<M>;
}

function canonicalMessage(type: string, message: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(FIELDS[type] ?? {})) {
    const v = message[name];
    if (v === undefined) continue;
    if (spec.map !== undefined) {
      const entries = (v as { key: unknown; value: unknown }[]).map((e) => ({
        key: e.key,
        value: isMessageName(spec.t) ? canonicalMessage(spec.t, e.value as Record<string, unknown>) : e.value,
      }));
      if (entries.length > 0) out[name] = entries.sort((a, b) => compareKeys(a.key, b.key));
    } else if (spec.repeated === true) {
      const list = (v as unknown[]).map((x) => (isMessageName(spec.t) ? canonicalMessage(spec.t, x as Record<string, unknown>) : x));
      if (list.length > 0) out[name] = list;
    } else if (isMessageName(spec.t)) {
      out[name] = canonicalMessage(spec.t, v as Record<string, unknown>);
    } else if (spec.oneof !== undefined || !isDefaultScalar(spec.t, v)) {
      out[name] = v;
    }
  }
  return out;
}

/** A string literal the tokenizer reads back byte for byte. */
export function quote(value: string): string {
  let out = '"';
  for (const byte of Buffer.from(value, 'utf8')) {
    const c = String.fromCharCode(byte);
    if (c === '"') out += '\\"';
    else if (c === '\\') out += '\\\\';
    else if (c === '\n') out += '\\n';
    else if (c === '\r') out += '\\r';
    else if (c === '\t') out += '\\t';
    else if (byte < 0x20 || byte === 0x7f) out += `\\${byte.toString(8).padStart(3, '0')}`;
    else out += c;
  }
  // Bytes >= 0x80 were appended one per char; turn them back into UTF-8 text.
  return `${Buffer.from(out, 'latin1').toString('utf8')}"`;
}

/** A scalar or enum value of type `t` as text format writes it. */
export function scalarText(t: string, v: unknown): string {
  if (isEnumName(t)) return typeof v === 'string' ? v : String(v);
  if (t === 'string') return quote(String(v));
  if (t === 'bool') return v === true ? 'true' : 'false';
  if (t === 'float' || t === 'double') {
    const n = Number(v);
    if (Number.isNaN(n)) return 'nan';
    if (n === Infinity) return 'inf';
    if (n === -Infinity) return '-inf';
    return Object.is(n, -0) ? '-0' : String(n);
  }
  return String(v);
}

class Printer {
  private readonly lines: string[] = [];
  constructor(private readonly target: string) {}

  private checkVersion(since: string | undefined, what: string): void {
    if (this.target === 'latest' || knownIn(since, this.target)) return;
    const when = since === 'unknown' ? 'in a release after 21.05 that popef-toolkit does not record' : `in Triton ${since}`;
    throw new PopefError(ErrorCode.InvalidInput, `${what} was introduced ${when}; the target is Triton ${this.target}`, {
      field: what,
      suggestion:
        since === 'unknown' ? 'leave it out, or print with --triton-version latest' : 'leave it out, or target a newer server with --triton-version',
    });
  }

  private checkEnum(t: string, v: unknown, path: string): void {
    if (isEnumName(t) && typeof v === 'string') this.checkVersion(ENUM_VALUE_SINCE[`${t}.${v}`], `value ${v} of ${path}`);
  }

  message(type: string, message: Record<string, unknown>, indent: string, path: string): void {
    for (const [name, spec] of Object.entries(FIELDS[type] ?? {})) {
      const v = message[name];
      if (v === undefined) continue;
      const fieldPath = path === '' ? name : `${path}.${name}`;
      this.checkVersion(spec.since, `field "${fieldPath}"`);
      if (spec.map !== undefined) {
        this.lines.push(`${indent}${name} [`);
        const entries = v as { key: unknown; value: unknown }[];
        entries.forEach((e, i) => {
          this.lines.push(`${indent}  {`);
          this.lines.push(`${indent}    key: ${scalarText(spec.map ?? 'string', e.key)}`);
          if (isMessageName(spec.t)) this.block('value', spec.t, e.value as Record<string, unknown>, `${indent}    `, `${fieldPath}[${i}].value`);
          else this.lines.push(`${indent}    value: ${scalarText(spec.t, e.value)}`);
          this.lines.push(`${indent}  }${i < entries.length - 1 ? ',' : ''}`);
        });
        this.lines.push(`${indent}]`);
      } else if (spec.repeated === true && isMessageName(spec.t)) {
        const t = spec.t;
        const items = v as Record<string, unknown>[];
        this.lines.push(`${indent}${name} [`);
        items.forEach((item, i) => {
          this.lines.push(`${indent}  {`);
          this.message(t, item, `${indent}    `, `${fieldPath}[${i}]`);
          this.lines.push(`${indent}  }${i < items.length - 1 ? ',' : ''}`);
        });
        this.lines.push(`${indent}]`);
      } else if (spec.repeated === true) {
        const items = v as unknown[];
        items.forEach((x) => this.checkEnum(spec.t, x, fieldPath));
        this.lines.push(`${indent}${name}: [ ${items.map((x) => scalarText(spec.t, x)).join(', ')} ]`);
      } else if (isMessageName(spec.t)) {
        this.block(name, spec.t, v as Record<string, unknown>, indent, fieldPath);
      } else {
        this.checkEnum(spec.t, v, fieldPath);
        this.lines.push(`${indent}${name}: ${scalarText(spec.t, v)}`);
      }
    }
  }

  private block(name: string, type: string, value: Record<string, unknown>, indent: string, path: string): void {
    const start = this.lines.length;
    this.lines.push(`${indent}${name} {`);
    this.message(type, value, `${indent}  `, path);
    if (this.lines.length === start + 1) this.lines[start] = `${indent}${name} { }`;
    else this.lines.push(`${indent}}`);
  }

  text(): string {
    return this.lines.length === 0 ? '' : `${this.lines.join('\n')}\n`;
  }
}

/** Prints a message (ModelConfig by default) as canonical text format. */
export function printPbtxt<M extends MessageName = 'inference.ModelConfig'>(
  message: Message<M>,
  options: PrintOptions & { readonly type?: M } = {},
): string {
  const type = options.type ?? ('inference.ModelConfig' as M);
  const target = options.tritonVersion ?? DEFAULT_TRITON_VERSION;
  if (target !== 'latest' && !/^\d{2}\.\d{2}$/.test(target)) {
    throw new PopefError(ErrorCode.InvalidInput, `Triton version ${JSON.stringify(target)} is not YY.MM (for example 21.05) or latest`, {
      field: 'triton version',
    });
  }
  const printer = new Printer(target);
  printer.message(type, canonicalize(type, message), '', '');
  return printer.text();
}
