import { ErrorCode, PopefError } from '../errors.js';
import type { Message } from './model-config.js';
import { TokenScanner, unescapeString, type SourcePos, type Token } from './pbtxt-lexer.js';
import { ENUMS, MESSAGES, isEnumName, isMessageName, type FieldSpec, type MessageName, type ScalarType } from './schema.js';

/**
 * A schema-driven parser for protobuf's text format, as Triton reads
 * config.pbtxt (TextFormat::ParseFromString). It accepts what protoc 3.21
 * accepts and fails where it fails, with the same message at the same
 * line:column (test/triton/protoc-differential.test.ts checks this against
 * protoc over a generated corpus).
 *
 * Proto3 presence is mirrored: a scalar counts as "set" (for the
 * "specified multiple times" rule) only once it holds a non-default value;
 * messages and oneof members count as set as soon as they appear.
 */

/** A parsed message as a plain object (see model-config.ts for the conventions). */
export type ParsedMessage = Record<string, unknown>;

/** A parsed message and where each of its fields is in the text. */
export interface ParseResult<M extends MessageName> {
  readonly message: Message<M>;
  /**
   * Where each field occurrence starts (its name token), by path:
   * `max_batch_size`, `input[0]`, `input[0].dims`, `input[0].dims[1]`,
   * `parameters[2].key`. Validators point their findings here.
   */
  readonly positions: ReadonlyMap<string, SourcePos>;
}

/** How parsePbtxt parses. */
export interface ParseOptions {
  /** File name for error messages. */
  readonly file?: string;
}

const INT_LIMITS: Record<'int32' | 'int64' | 'uint32' | 'uint64', bigint> = {
  int32: 2n ** 31n - 1n,
  int64: 2n ** 63n - 1n,
  uint32: 2n ** 32n - 1n,
  uint64: 2n ** 64n - 1n,
};

/** The type name protoc uses for a map field's entry message, e.g. "inference.ModelConfig.ParametersEntry". */
export function mapEntryTypeName(parent: string, field: string): string {
  const camel = field
    .split('_')
    .map((part) => (part === '' ? '' : (part[0] ?? '').toUpperCase() + part.slice(1)))
    .join('');
  return `${parent}.${camel}Entry`;
}

/** Is `value` the proto3 default of a field of type `t` (so it does not count as present)? */
function isDefault(t: string, value: unknown): boolean {
  if (isEnumName(t)) return value === ENUMS[t][0] || value === 0;
  return value === 0 || value === 0n || value === false || value === '';
}

/** Elements of a repeated scalar field (dims) whose own position is kept; later ones point at the field. */
const SCALAR_POSITIONS = 64;
/**
 * Elements of a repeated message field (input, output) whose fields' positions
 * are kept; for later ones only the element's own position is: a config of a
 * million inputs must not cost a map of ten million paths.
 */
const FINE_ELEMENTS = 1000;
const DECIMAL = /^(?:0|[1-9]\d*)$/;

/** What the parser needs of one field, looked up once per field occurrence. */
interface FieldPlan {
  /**
   * The field's name as the schema spells it: the string the parsed message is keyed by. Not the token's text, which
   * is equal but a new string each time, hashed and looked up in V8's string table at each store (issue 26).
   */
  readonly name: string;
  readonly spec: FieldSpec;
  /** A repeated or map field. */
  readonly repeated: boolean;
  /** Its values are messages (a map field's are its entries). */
  readonly isMessage: boolean;
  /** The message type of its values: a map field's entry type, or `spec.t`. */
  readonly valueType: string;
}

let fieldPlans: ReadonlyMap<string, ReadonlyMap<string, FieldPlan>> | undefined;

/**
 * Message type -> field name -> plan, map entry types (with their key and
 * value fields) included. Built once, on first use: unoptimized, the
 * lookups it replaces (the schema's tables, the map entry table, the
 * message-name test) cost more per field than the rest of consumeField
 * (issue 26).
 */
function plans(): ReadonlyMap<string, ReadonlyMap<string, FieldPlan>> {
  if (fieldPlans !== undefined) return fieldPlans;
  const table = new Map<string, Map<string, FieldPlan>>();
  const plan = (name: string, spec: FieldSpec, valueType: string): FieldPlan => ({
    name,
    spec,
    repeated: spec.repeated === true || spec.map !== undefined,
    isMessage: spec.map !== undefined || isMessageName(spec.t),
    valueType,
  });
  for (const [msg, fields] of Object.entries(MESSAGES)) {
    const byName = new Map<string, FieldPlan>();
    for (const [field, spec] of Object.entries(fields as Record<string, FieldSpec>)) {
      if (spec.map === undefined) {
        byName.set(field, plan(field, spec, spec.t));
        continue;
      }
      const entryType = mapEntryTypeName(msg, field);
      byName.set(field, plan(field, spec, entryType));
      const key: FieldSpec = { n: 1, t: spec.map };
      const value: FieldSpec = { n: 2, t: spec.t };
      table.set(
        entryType,
        new Map([
          ['key', plan('key', key, key.t)],
          ['value', plan('value', value, value.t)],
        ]),
      );
    }
    table.set(msg, byName);
  }
  fieldPlans = table;
  return table;
}
const INT_MAX: Record<'int32' | 'int64' | 'uint32' | 'uint64', number> = {
  int32: 2 ** 31 - 1,
  int64: Number.MAX_SAFE_INTEGER,
  uint32: 2 ** 32 - 1,
  uint64: Number.MAX_SAFE_INTEGER,
};

/** The field consumeField is reading, for store(). */
interface FieldInProgress {
  readonly message: ParsedMessage;
  readonly set: Set<string>;
  readonly name: string;
  readonly spec: FieldSpec;
  readonly fieldPath: string;
  readonly repeated: boolean;
  readonly isMessage: boolean;
}

/** The positions of a parse that keeps none: never written (every write is behind coarse === 0). */
const NO_POSITIONS_KEPT = new Map<string, SourcePos>();

class Parser {
  /** Made only by a parse that keeps positions. */
  private readonly positions: Map<string, SourcePos>;
  private token: Token;
  /**
   * Inside how many repeated elements past FINE_ELEMENTS the parser is (positions of their fields are not kept); when
   * the parse keeps no positions at all, 1 for the whole parse, so that no path is built either.
   */
  private coarse: number;

  constructor(
    private readonly scanner: TokenScanner,
    private readonly file: string | undefined,
    keepPositions: boolean,
  ) {
    this.coarse = keepPositions ? 0 : 1;
    this.positions = keepPositions ? new Map<string, SourcePos>() : NO_POSITIONS_KEPT;
    this.token = scanner.next();
    this.enter();
  }

  /** The current token's type, read afresh (advancing changes it). */
  private currentType(): Token['type'] {
    return this.token.type;
  }

  /** The current token's scan errors surface when it becomes current, as in protoc. */
  private enter(): void {
    const first = this.token.errors[0];
    if (first !== undefined) this.fail(first.message, first);
  }

  private advance(): void {
    if (this.token.type === 'end') return;
    this.token = this.scanner.next();
    if (this.token.errors.length > 0) this.enter();
  }

  private fail(message: string, at: SourcePos = this.token): never {
    throw new PopefError(ErrorCode.Parse, message, {
      file: this.file,
      line: at.line,
      column: at.column,
      suggestion: 'see the protobuf text format: fields as name: value, messages in { }, lists in [ ]',
    });
  }

  private lookingAt(symbol: string): boolean {
    const t = this.token;
    // The text first: it differs far more often than the type does (a string token's text keeps its quotes).
    return t.text === symbol && (t.type === 'symbol' || t.type === 'identifier');
  }

  private tryConsume(symbol: string): boolean {
    if (this.lookingAt(symbol)) {
      this.advance();
      return true;
    }
    return false;
  }

  private consume(symbol: string): void {
    if (!this.tryConsume(symbol)) this.fail(`Expected "${symbol}", found "${this.token.text}".`);
  }

  private consumeIdentifier(): string {
    const t = this.token;
    if (t.type !== 'identifier') this.fail(`Expected identifier, got: ${t.text}`);
    this.advance();
    return t.text;
  }

  parseTop(type: MessageName): ParsedMessage {
    const message: ParsedMessage = {};
    const set = new Set<string>();
    while (this.token.type !== 'end') this.consumeField(type, message, set, '');
    return message;
  }

  private consumeMessage(type: string, path: string, delimiter: string): ParsedMessage {
    const message: ParsedMessage = {};
    const set = new Set<string>();
    // lookingAt('>') and lookingAt('}') spelt out, as in consumeField: this runs once per field.
    for (let t = this.token; !((t.text === '}' || t.text === '>') && t.type === 'symbol'); t = this.token)
      this.consumeField(type, message, set, path);
    this.consume(delimiter);
    return message;
  }

  private consumeField(type: string, message: ParsedMessage, set: Set<string>, path: string): void {
    const start = this.token;
    // The checks for '[' here and for ';' or ',' at the end are spelt out: they run for every field, and unoptimized,
    // each call through tryConsume and lookingAt costs more than the comparison.
    if (start.text === '[' && start.type === 'symbol') {
      this.advance();
      let name = this.consumeIdentifier();
      while (this.tryConsume('.')) name += `.${this.consumeIdentifier()}`;
      this.consume(']');
      this.fail(`Extension "${name}" is not defined or is not an extension of "${type}".`);
    }
    const written = this.consumeIdentifier();
    const plan = plans().get(type)?.get(written);
    if (plan === undefined) this.fail(`Message type "${type}" has no field named "${written}".`);
    const { name, spec, repeated, isMessage, valueType } = plan;
    if (!repeated && set.has(name)) this.fail(`Non-repeated field "${name}" is specified multiple times.`);
    if (spec.oneof !== undefined) {
      const other = Object.keys(message).find((k) => k !== name && this.specFor(type, k)?.oneof === spec.oneof && set.has(k));
      if (other !== undefined) {
        this.fail(`Field "${name}" is specified along with field "${other}", another member of oneof "${spec.oneof}".`);
      }
    }
    // Paths serve positions alone: without positions they are not built.
    const fieldPath = this.coarse !== 0 ? '' : path === '' ? name : `${path}.${name}`;
    if (this.coarse === 0 && !this.positions.has(fieldPath)) this.positions.set(fieldPath, { line: start.line, column: start.column });
    const field: FieldInProgress = { message, set, name, spec, fieldPath, repeated, isMessage };

    if (isMessage) {
      this.tryConsume(':');
      if (repeated && this.tryConsume('[')) {
        if (!this.tryConsume(']')) {
          for (;;) {
            const at = this.token;
            this.storeElement(field, valueType, at);
            if (this.tryConsume(']')) break;
            this.consume(',');
          }
        }
      } else if (repeated) {
        this.storeElement(field, valueType, this.token);
      } else {
        const at = this.token;
        this.store(field, this.consumeMessageValue(valueType, spec, fieldPath), at);
      }
    } else {
      const colon = this.token;
      if (colon.text === ':' && colon.type === 'symbol') this.advance();
      else this.consume(':');
      if (repeated && this.tryConsume('[')) {
        if (!this.tryConsume(']')) {
          for (;;) {
            const at = this.token;
            this.store(field, this.consumeScalar(spec, name), at);
            if (this.tryConsume(']')) break;
            this.consume(',');
          }
        }
      } else {
        const at = this.token;
        this.store(field, this.consumeScalar(spec, name), at);
      }
    }
    const after = this.token;
    if ((after.text === ';' || after.text === ',') && after.type === 'symbol') this.advance();
  }

  /** Parses one element of a repeated message field and stores it, its path built once for both. */
  private storeElement(field: FieldInProgress, valueType: string, at: SourcePos): void {
    const index = this.countOf(field.message, field.name);
    const path = this.coarse !== 0 ? '' : `${field.fieldPath}[${index}]`;
    this.store(field, this.element(valueType, field.spec, path, index), at, path);
  }

  /** Puts one value of `field` into its message; `elementPath` is a repeated value's path when the caller has it. */
  private store(field: FieldInProgress, value: unknown, at: SourcePos, elementPath?: string): void {
    const { message, name } = field;
    if (field.repeated) {
      const list = (message[name] ?? []) as unknown[];
      // Positions, not tokens, are kept; for a long list of scalars only the first few.
      if (this.coarse === 0 && (field.isMessage || list.length < SCALAR_POSITIONS))
        this.positions.set(elementPath ?? `${field.fieldPath}[${list.length}]`, { line: at.line, column: at.column });
      list.push(value);
      message[name] = list;
    } else {
      message[name] = value;
      // Proto3: a scalar outside a oneof is "present" only when non-default.
      if (field.isMessage || field.spec.oneof !== undefined || !isDefault(field.spec.t, value)) field.set.add(name);
    }
  }

  /** One element (at `path`) of a repeated message field; past FINE_ELEMENTS its fields keep no positions. */
  private element(type: string, spec: FieldSpec, path: string, index: number): ParsedMessage {
    const coarse = index >= FINE_ELEMENTS;
    if (coarse) this.coarse += 1;
    try {
      return this.consumeMessageValue(type, spec, path);
    } finally {
      if (coarse) this.coarse -= 1;
    }
  }

  /** A small non-negative decimal integer read without BigInt (most dims); undefined sends the token down the full path. */
  private fastInteger(max: number): number | undefined {
    const t = this.token;
    if (t.type !== 'integer' || t.text.length > 15 || !DECIMAL.test(t.text)) return undefined;
    const n = Number(t.text);
    if (n > max) return undefined;
    this.advance();
    return n;
  }

  private countOf(message: ParsedMessage, name: string): number {
    const list = message[name];
    return Array.isArray(list) ? list.length : 0;
  }

  /** A field's spec, including the synthetic key/value fields of map entries. */
  private specFor(type: string, name: string): FieldSpec | undefined {
    return plans().get(type)?.get(name)?.spec;
  }

  private consumeMessageValue(type: string, spec: FieldSpec, path: string): ParsedMessage {
    let delimiter = '}';
    if (this.tryConsume('<')) delimiter = '>';
    else this.consume('{');
    const value = this.consumeMessage(type, path, delimiter);
    if (spec.map !== undefined) {
      // Entries always carry both sides, so a missing one reads as its default.
      if (!('key' in value)) value.key = spec.map === 'uint64' ? 0 : '';
      if (!('value' in value)) value.value = isMessageName(spec.t) ? {} : defaultScalar(spec.t);
    }
    return value;
  }

  private consumeScalar(spec: FieldSpec, name: string): unknown {
    const t = spec.t;
    switch (t as ScalarType) {
      case 'string':
        return this.consumeString();
      case 'bool':
        return this.consumeBool(name);
      case 'float':
      case 'double':
        return this.consumeDouble();
      case 'int32':
      case 'int64':
        return this.fastInteger(INT_MAX[t as 'int32' | 'int64']) ?? narrow(this.consumeSigned(INT_LIMITS[t as 'int32' | 'int64']));
      case 'uint32':
      case 'uint64':
        return this.fastInteger(INT_MAX[t as 'uint32' | 'uint64']) ?? narrow(this.consumeUnsigned(INT_LIMITS[t as 'uint32' | 'uint64']));
    }
    if (isEnumName(t)) return this.consumeEnum(t, name);
    throw new Error(`no scalar type ${t}`);
  }

  private consumeString(): string {
    if (this.token.type !== 'string') this.fail(`Expected string, got: ${this.token.text}`);
    const first = this.token.text;
    if (!first.includes('\\')) {
      // No escapes: the text between the quotes is the value, unless literals follow to be joined.
      this.advance();
      if (this.currentType() !== 'string') return first.slice(1, -1);
      return first.slice(1, -1) + this.consumeString();
    }
    const parts: Uint8Array[] = [];
    // Adjacent string literals concatenate.
    while (this.currentType() === 'string') {
      parts.push(unescapeString(this.token.text));
      this.advance();
    }
    return Buffer.concat(parts).toString('utf8');
  }

  private consumeBool(name: string): boolean {
    if (this.token.type === 'integer') return this.consumeUnsigned(1n) === 1n;
    const word = this.consumeIdentifier();
    if (word === 'true' || word === 'True' || word === 't') return true;
    if (word === 'false' || word === 'False' || word === 'f') return false;
    this.fail(`Invalid value for boolean field "${name}". Value: "${word}".`);
  }

  private consumeUnsigned(max: bigint): bigint {
    const t = this.token;
    if (t.type !== 'integer') this.fail(`Expected integer, got: ${t.text}`);
    const value = parseInteger(t.text);
    if (value === undefined || value > max) this.fail(`Integer out of range (${t.text})`);
    this.advance();
    return value;
  }

  private consumeSigned(max: bigint): bigint {
    const negative = this.tryConsume('-');
    const value = this.consumeUnsigned(negative ? max + 1n : max);
    return negative ? -value : value;
  }

  private consumeDouble(): number {
    const negative = this.tryConsume('-');
    const t = this.token;
    let value: number;
    if (t.type === 'integer') {
      if (/^0[xX]/.test(t.text) || (t.text.length > 1 && t.text.startsWith('0'))) this.fail(`Expect a decimal number, got: ${t.text}`);
      const parsed = parseInteger(t.text);
      if (parsed === undefined || parsed > INT_LIMITS.uint64) this.fail(`Integer out of range (${t.text})`);
      value = Number(parsed);
      this.advance();
    } else if (t.type === 'float') {
      value = Number(t.text.replace(/[fF]$/, '').replace(/[eE]$/, ''));
      this.advance();
    } else if (t.type === 'identifier') {
      const word = t.text.toLowerCase();
      if (word === 'inf' || word === 'infinity') value = Infinity;
      else if (word === 'nan') value = NaN;
      else this.fail(`Expected double, got: ${word}`);
      this.advance();
    } else {
      this.fail(`Expected double, got: ${t.text}`);
    }
    return negative ? -value : value;
  }

  private consumeEnum(type: keyof typeof ENUMS, name: string): string | number {
    const values: readonly string[] = ENUMS[type];
    if (this.token.type === 'identifier') {
      const word = this.consumeIdentifier();
      if (values.includes(word)) return word;
      this.fail(`Unknown enumeration value of "${word}" for field "${name}".`);
    }
    if (this.lookingAt('-') || this.token.type === 'integer') {
      const number = Number(this.consumeSigned(INT_LIMITS.int32));
      // Proto3 enums are open: a number the enum does not name is kept as is.
      return values[number] ?? number;
    }
    this.fail(`Expected integer or identifier, got: ${this.token.text}`);
  }

  get positionMap(): ReadonlyMap<string, SourcePos> {
    return this.positions;
  }
}

function defaultScalar(t: string): unknown {
  if (isEnumName(t)) return ENUMS[t][0];
  if (t === 'string') return '';
  if (t === 'bool') return false;
  return 0;
}

/** Integers as protobuf's tokenizer reads them: decimal, 0x hex, leading-0 octal. */
function parseInteger(text: string): bigint | undefined {
  try {
    if (/^0[xX][0-9a-fA-F]+$/.test(text)) return BigInt(text);
    if (/^0[0-7]+$/.test(text)) return BigInt(`0o${text.slice(1)}`);
    if (/^\d+$/.test(text)) return BigInt(text);
  } catch {
    return undefined;
  }
  return undefined;
}

/** 64-bit values stay bigints only when a number could not hold them exactly. */
function narrow(value: bigint): number | bigint {
  return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value;
}

/** Parses config.pbtxt (text, or its UTF-8 bytes) into a typed ModelConfig (or another message). Throws E_PARSE with line:column. */
export function parsePbtxt<M extends MessageName = 'inference.ModelConfig'>(
  text: string | Uint8Array,
  options: ParseOptions & { readonly type?: M } = {},
): ParseResult<M> {
  const parser = new Parser(new TokenScanner(text), options.file, true);
  const message = parser.parseTop(options.type ?? 'inference.ModelConfig');
  return { message: message as Message<M>, positions: parser.positionMap };
}

/**
 * parsePbtxt, with the positions made the first time they are looked at,
 * by a second parse of `text`, which must not change until then (validate
 * parses a buffer of its own; see PositionsOnDemand). For validate, not
 * the library's callers: the positions are then not a Map (they cannot be
 * cloned to another thread or written as JSON).
 */
export function parsePbtxtPositionsOnDemand<M extends MessageName = 'inference.ModelConfig'>(
  text: string | Uint8Array,
  options: ParseOptions & { readonly type?: M } = {},
): ParseResult<M> {
  const type = options.type ?? 'inference.ModelConfig';
  const message = new Parser(new TokenScanner(text), options.file, false).parseTop(type);
  // The positions of a text that has parsed once: the eager parse of it again.
  return { message: message as Message<M>, positions: new PositionsOnDemand(() => parsePbtxt(text, { file: options.file, type }).positions) };
}

/**
 * ParseResult.positions, made the first time they are looked at, by a
 * second parse that keeps them. Most configs get no finding that points
 * into them (validate checks thousands at a time, and a clean one is never
 * looked up), and keeping positions (a path string and a map entry for
 * every field and element) was about a tenth of a parse before V8
 * optimises the parser (issue 26). The parser is deterministic, so the
 * second parse finds what the first would have kept.
 */
class PositionsOnDemand implements ReadonlyMap<string, SourcePos> {
  private made: ReadonlyMap<string, SourcePos> | undefined;

  constructor(private readonly make: () => ReadonlyMap<string, SourcePos>) {}

  private map(): ReadonlyMap<string, SourcePos> {
    return (this.made ??= this.make());
  }

  get size(): number {
    return this.map().size;
  }

  get(key: string): SourcePos | undefined {
    return this.map().get(key);
  }

  has(key: string): boolean {
    return this.map().has(key);
  }

  forEach(callback: (value: SourcePos, key: string, map: ReadonlyMap<string, SourcePos>) => void, thisArg?: unknown): void {
    this.map().forEach((value, key) => callback.call(thisArg, value, key, this));
  }

  entries(): MapIterator<[string, SourcePos]> {
    return this.map().entries();
  }

  keys(): MapIterator<string> {
    return this.map().keys();
  }

  values(): MapIterator<SourcePos> {
    return this.map().values();
  }

  [Symbol.iterator](): MapIterator<[string, SourcePos]> {
    return this.map()[Symbol.iterator]();
  }
}
