/**
 * JSON as Triton's frontends read and write it: TritonJson (common r24.10,
 * include/triton/common/triton_json.h) over RapidJSON 1.1.0, parsing with
 * kParseNanAndInfFlag and writing with kWriteNanAndInfFlag. What that means,
 * and where it differs from JSON.parse / JSON.stringify:
 *
 * - `NaN`, `Inf`, `Infinity` (each may follow a `-`) are numbers; `-NaN` is NaN.
 * - A literal too large for a double is refused ("Number too big to be
 *   stored in double.", at the number's offset): an exponent past
 *   308 - (fraction digits), or an integer part past DBL_MAX / 10. Others
 *   that overflow (2e308) become Infinity. Values are computed as RapidJSON's
 *   normal-precision path computes them (significand of up to 17 digits
 *   times a power of ten), so they are the doubles Triton gets.
 * - An integer token is exact across RapidJSON's 64 bits (-2^63 to 2^64 - 1):
 *   a number while it is a safe integer (|n| <= 2^53 - 1), a bigint past
 *   that, so that a uint64 sequence id or an INT64 element is not rounded.
 *   Past those 64 bits RapidJSON makes it a double: a {@link JsonDouble}.
 * - A number written with a fraction or an exponent is a double even when
 *   its value is whole: such a value is a {@link JsonDouble}, so that a
 *   reader wanting an integer refuses it as Triton's accessors do.
 * - A duplicate key keeps its first value (RapidJSON's FindMember).
 * - Errors are RapidJSON's messages with its byte offsets; the first NUL
 *   byte ends the text.
 * - Written doubles use RapidJSON's notation: `1.0`, `0.0`, `1e21`,
 *   `NaN`, `Infinity`, `-Infinity`.
 *
 * The parser is iterative (no recursion, so nesting depth costs heap, not
 * stack) and can stop between tokens and resume (`parseTritonJsonSliced`),
 * so a large body is read without holding the event loop.
 */

/** A whole number that the text wrote as a double (`1.0`, `2e3`): RapidJSON's kNumberType without the integer flags. */
export class JsonDouble {
  constructor(readonly value: number) {}
}

/** A parse error: RapidJSON's message (GetParseError_En) and the byte offset it reports. */
export class JsonSyntaxError extends Error {
  constructor(
    readonly reason: string,
    readonly offset: number,
  ) {
    super(`${reason} at ${offset}`);
  }
}

/** The number a JSON value holds, integer or double, or undefined for any other value (TritonJson's AsDouble). */
export function jsonNumber(value: unknown): number | undefined {
  if (typeof value === 'number') return value;
  // GetDouble of an Int64 or Uint64: static_cast<double>, the nearest double (as Number rounds).
  if (typeof value === 'bigint') return Number(value);
  return value instanceof JsonDouble ? value.value : undefined;
}

const INT64_MAX = 2n ** 63n - 1n;

/**
 * Whether a JSON value is an integer token that RapidJSON holds as a Uint64
 * (TritonJson's AsUInt accepts it): 0 to 2^64 - 1. A whole double (`1.0`,
 * a literal past 2^64 - 1) is not one. No allocation for a plain number.
 */
export function isJsonUInt(value: unknown): value is number | bigint {
  if (typeof value === 'number') return Number.isInteger(value) && value >= 0;
  return typeof value === 'bigint' && value >= 0n;
}

/** Whether a JSON value is an integer token that RapidJSON holds as an Int64 (AsInt accepts it): -2^63 to 2^63 - 1. */
export function isJsonInt(value: unknown): value is number | bigint {
  if (typeof value === 'number') return Number.isInteger(value);
  return typeof value === 'bigint' && value <= INT64_MAX;
}

/** Whether a JSON value is a number of any kind (RapidJSON's IsNumber): an integer token, a double, NaN or an infinity. */
export function isJsonNumber(value: unknown): boolean {
  return typeof value === 'number' || typeof value === 'bigint' || value instanceof JsonDouble;
}

const MESSAGES = {
  empty: 'The document is empty.',
  notSingular: 'The document root must not be followed by other values.',
  invalid: 'Invalid value.',
  missName: 'Missing a name for object member.',
  missColon: 'Missing a colon after a name of object member.',
  missCommaOrCurly: "Missing a comma or '}' after an object member.",
  missCommaOrSquare: "Missing a comma or ']' after an array element.",
  badHex: 'Incorrect hex digit after \\u escape in string.',
  badSurrogate: 'The surrogate pair in string is invalid.',
  badEscape: 'Invalid escape character in string.',
  missQuote: 'Missing a closing quotation mark in string.',
  tooBig: 'Number too big to be stored in double.',
  missFraction: 'Miss fraction part in number.',
  missExponent: 'Miss exponent in number.',
} as const;

const ESCAPES: Readonly<Record<number, string>> = { 0x22: '"', 0x5c: '\\', 0x2f: '/', 0x62: '\b', 0x66: '\f', 0x6e: '\n', 0x72: '\r', 0x74: '\t' };

/** 10^n as a double (RapidJSON's Pow10 table holds the same correctly rounded literals). */
const POW10: readonly number[] = Array.from({ length: 309 }, (_, n) => Number(`1e${n}`));
// RapidJSON's literal, read as C++ reads it (the double nearest to it).
const DBL_MAX_OVER_10 = Number('1.7976931348623157e307');
const MAX_SAFE = 2 ** 53 - 1;

type Frame = { readonly items: unknown[]; readonly object?: undefined } | { readonly object: Record<string, unknown>; key: string };

/** How far a sliced parse goes before it lets the event loop run. */
export const JSON_SLICE_BYTES = 1 << 20;

/** What the parser expects next; whitespace before each of these is skipped by the loop, a slice at a time. */
const enum Expect {
  /** The document's start: blank to the end is an empty document. */
  Start,
  Value,
  /** Just after `[`: `]` or a value. */
  ArrayFirst,
  /** Just after `{`: `}` or a key. */
  ObjectFirst,
  Key,
  Colon,
  /** After a value in a container: `,` or its closing bracket. */
  After,
  /** After the root value: nothing but whitespace. */
  End,
}

class Parser {
  private pos = 0;
  private readonly end: number;
  private readonly stack: Frame[] = [];
  private expect = Expect.Start;
  private root: unknown;

  constructor(private readonly bytes: Uint8Array) {
    const nul = bytes.indexOf(0);
    this.end = nul < 0 ? bytes.byteLength : nul;
  }

  /**
   * Parses until `limit` bytes are behind it or the document ends; true once
   * it has ended. It stops between tokens or inside a run of whitespace, so
   * that no stretch of the body (a megabyte of padding included) is read in
   * one go, strings and numbers apart.
   */
  run(limit: number): boolean {
    const b = this.bytes;
    const end = this.end;
    const stop = this.pos + limit;
    for (;;) {
      // RapidJSON's whitespace is these four only.
      let p = this.pos;
      while (p < end) {
        const c = b[p] as number;
        if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) break;
        if (++p >= stop) {
          this.pos = p;
          return false;
        }
      }
      this.pos = p;
      if (p >= stop && this.expect !== Expect.End) return false;
      switch (this.expect) {
        case Expect.Start:
          if (p >= end) throw this.fail('empty');
          this.expect = Expect.Value;
          break;
        case Expect.Value:
          this.value();
          break;
        case Expect.ArrayFirst:
          if (this.consume(0x5d)) this.close();
          else this.expect = Expect.Value;
          break;
        case Expect.ObjectFirst:
          if (this.consume(0x7d)) this.close();
          else this.expect = Expect.Key;
          break;
        case Expect.Key:
          this.key();
          break;
        case Expect.Colon:
          if (!this.consume(0x3a /* : */)) throw this.fail('missColon');
          this.expect = Expect.Value;
          break;
        case Expect.After:
          this.after();
          break;
        case Expect.End:
          if (p < end) throw this.fail('notSingular');
          return true;
      }
    }
  }

  result(): unknown {
    return this.root;
  }

  private fail(kind: keyof typeof MESSAGES, at = this.pos): JsonSyntaxError {
    return new JsonSyntaxError(MESSAGES[kind], at);
  }

  private peek(): number {
    return this.pos < this.end ? (this.bytes[this.pos] as number) : 0;
  }

  private consume(c: number): boolean {
    if (this.peek() !== c) return false;
    this.pos++;
    return true;
  }

  private value(): void {
    const c = this.peek();
    if (c === 0x7b /* { */) {
      this.pos++;
      this.stack.push({ object: Object.create(null) as Record<string, unknown>, key: '' });
      this.expect = Expect.ObjectFirst;
      return;
    }
    if (c === 0x5b /* [ */) {
      this.pos++;
      this.stack.push({ items: [] });
      this.expect = Expect.ArrayFirst;
      return;
    }
    if (c === 0x22 /* " */) return this.complete(this.string());
    if (c === 0x6e) return this.complete(this.literal('null', null));
    if (c === 0x74) return this.complete(this.literal('true', true));
    if (c === 0x66) return this.complete(this.literal('false', false));
    this.complete(this.number());
  }

  /** An object's key (ParseObject's loop head); its colon comes next. */
  private key(): void {
    if (this.peek() !== 0x22) throw this.fail('missName');
    const top = this.stack[this.stack.length - 1] as Frame & { object: Record<string, unknown> };
    top.key = this.string();
    this.expect = Expect.Colon;
  }

  /** A `,` or the closing bracket after a container's value. */
  private after(): void {
    const top = this.stack[this.stack.length - 1] as Frame;
    const c = this.peek();
    if (c === 0x2c) {
      this.pos++;
      this.expect = top.object === undefined ? Expect.Value : Expect.Key;
      return;
    }
    if (c !== (top.object === undefined ? 0x5d : 0x7d)) throw this.fail(top.object === undefined ? 'missCommaOrSquare' : 'missCommaOrCurly');
    this.pos++;
    this.close();
  }

  /** The innermost container is finished: it is a value of its parent, or the root. */
  private close(): void {
    const top = this.stack.pop() as Frame;
    this.complete(top.object === undefined ? top.items : top.object);
  }

  /** A finished value goes into its container, or is the root. */
  private complete(value: unknown): void {
    const top = this.stack[this.stack.length - 1];
    if (top === undefined) {
      this.root = value;
      this.expect = Expect.End;
      return;
    }
    if (top.object === undefined) top.items.push(value);
    // RapidJSON keeps every member and FindMember finds the first.
    else if (!Object.hasOwn(top.object, top.key)) top.object[top.key] = value;
    this.expect = Expect.After;
  }

  private literal(word: string, value: null | boolean): null | boolean {
    this.pos++;
    for (let i = 1; i < word.length; i++) if (!this.consume(word.charCodeAt(i))) throw this.fail('invalid');
    return value;
  }

  private string(): string {
    const b = this.bytes;
    this.pos++;
    let start = this.pos;
    let out = '';
    for (;;) {
      let p = this.pos;
      while (p < this.end) {
        const c = b[p] as number;
        if (c === 0x22 || c === 0x5c || c < 0x20) break;
        p++;
      }
      this.pos = p;
      const c = this.peek();
      if (c === 0x22) {
        out += Buffer.from(b.buffer, b.byteOffset + start, p - start).toString('utf8');
        this.pos++;
        return out;
      }
      if (c === 0x5c) {
        out += Buffer.from(b.buffer, b.byteOffset + start, p - start).toString('utf8');
        out += this.escape();
        start = this.pos;
        continue;
      }
      if (c === 0) throw this.fail('missQuote');
      throw this.fail('badEscape');
    }
  }

  private escape(): string {
    const at = this.pos;
    this.pos++;
    const e = this.peek();
    const simple = ESCAPES[e];
    if (simple !== undefined) {
      this.pos++;
      return simple;
    }
    if (e !== 0x75 /* u */) throw this.fail('badEscape', at);
    this.pos++;
    let code = this.hex4(at);
    if (code >= 0xd800 && code <= 0xdbff) {
      if (!this.consume(0x5c) || !this.consume(0x75)) throw this.fail('badSurrogate', at);
      const low = this.hex4(at);
      if (low < 0xdc00 || low > 0xdfff) throw this.fail('badSurrogate', at);
      code = ((code - 0xd800) << 10) + (low - 0xdc00) + 0x10000;
    }
    return String.fromCodePoint(code);
  }

  private hex4(escapeAt: number): number {
    let code = 0;
    for (let i = 0; i < 4; i++) {
      const c = this.peek();
      const digit = c >= 0x30 && c <= 0x39 ? c - 0x30 : c >= 0x41 && c <= 0x46 ? c - 0x37 : c >= 0x61 && c <= 0x66 ? c - 0x57 : -1;
      if (digit < 0) throw this.fail('badHex', escapeAt);
      code = code * 16 + digit;
      this.pos++;
    }
    return code;
  }

  /**
   * RapidJSON's ParseNumber (reader.h, normal precision): the same
   * significand, the same exponent bookkeeping, so the same errors and the
   * same double.
   */
  private number(): number | bigint | JsonDouble {
    const b = this.bytes;
    const start = this.pos;
    const minus = this.consume(0x2d);
    let c = this.peek();
    // RapidJSON's significand (exact while an integer of at most 2^64, then a double), its significandDigit and useDouble.
    let significand = 0;
    let digits = 0;
    let asDouble = false;
    // NaN or an infinity; a fraction or an exponent after it replaces it (RapidJSON goes on parsing with a zero significand).
    let special: number | undefined;
    // Where the integer digits start (past the sign), for the exact value of a long one.
    const from = this.pos;
    if (c === 0x30) this.pos++;
    else if (c >= 0x31 && c <= 0x39) {
      significand = c - 0x30;
      this.pos++;
      while (isDigit((c = this.peek()))) {
        if (!asDouble) {
          const next = significand * 10 + (c - 0x30);
          // Doubles cannot tell 2^64 - 1 from 2^64: near the limit the digits are compared exactly.
          if (next < 1e18 || this.fits64(from, minus)) {
            significand = next;
            digits++;
            this.pos++;
            continue;
          }
          // Past 64 bits: the integer so far becomes a double, which must stay below DBL_MAX / 10 as digits are added.
          significand = this.exactInteger(from);
          asDouble = true;
        }
        if (significand >= DBL_MAX_OVER_10) throw this.fail('tooBig', start);
        significand = significand * 10 + (c - 0x30);
        this.pos++;
      }
      // Past 2^53 the sums above were rounded at each step; RapidJSON rounds the 64-bit integer once.
      if (!asDouble && digits >= 15) significand = this.exactInteger(from);
    } else if (c === 0x4e /* N */ || c === 0x49 /* I */) {
      if (this.consume(0x4e)) {
        if (!this.consume(0x61) || !this.consume(0x4e)) throw this.fail('invalid');
        special = NaN;
      } else {
        this.pos++;
        if (!this.consume(0x6e) || !this.consume(0x66)) throw this.fail('invalid');
        if (this.peek() === 0x69) for (const ch of 'inity') if (!this.consume(ch.charCodeAt(0))) throw this.fail('invalid');
        special = minus ? -Infinity : Infinity;
      }
    } else throw this.fail('invalid');

    let expFrac = 0;
    let fractional = false;
    if (this.consume(0x2e)) {
      fractional = true;
      if (!isDigit(this.peek())) throw this.fail('missFraction');
      if (!asDouble) {
        while (isDigit((c = this.peek()))) {
          if (significand > MAX_SAFE) break;
          const next = significand * 10 + (c - 0x30);
          // RapidJSON's uint64 is exact here and rounded once to a double; two double operations could round twice.
          significand = next <= MAX_SAFE ? next : Number(BigInt(significand) * 10n + BigInt(c - 0x30));
          expFrac--;
          if (significand !== 0) digits++;
          this.pos++;
        }
        asDouble = true;
      }
      while (isDigit((c = this.peek()))) {
        if (digits < 17) {
          significand = significand * 10 + (c - 0x30);
          expFrac--;
          if (significand > 0) digits++;
        }
        this.pos++;
      }
    }
    let exp = 0;
    let exponent = false;
    if (this.consume(0x65) || this.consume(0x45)) {
      exponent = true;
      let expMinus = false;
      if (!this.consume(0x2b)) expMinus = this.consume(0x2d);
      if (!isDigit(this.peek())) throw this.fail('missExponent');
      exp = (b[this.pos++] as number) - 0x30;
      if (expMinus) {
        while (isDigit((c = this.peek()))) {
          // RapidJSON stops counting at 214748364 (its issue #313) and takes the rest of the digits.
          if (exp < 214748364) exp = exp * 10 + (c - 0x30);
          this.pos++;
        }
        exp = -exp;
      } else {
        const maxExp = 308 - expFrac;
        while (isDigit((c = this.peek()))) {
          exp = exp * 10 + (c - 0x30);
          if (exp > maxExp) throw this.fail('tooBig', start);
          this.pos++;
        }
      }
    }
    if (!fractional && !exponent) {
      if (special !== undefined) return special;
      // An integer token (RapidJSON's Int, Uint, Int64, Uint64), unless it passed 64 bits and became a double.
      if (!asDouble) {
        // Past 2^53 - 1 the double above is rounded (its rounding is monotonic, so the test is exact): the digits are read again as a bigint.
        if (significand > MAX_SAFE) {
          const exact = BigInt(Buffer.from(b.buffer, b.byteOffset + from, this.pos - from).toString('latin1'));
          return minus ? -exact : exact;
        }
        return minus ? -significand || 0 : significand;
      }
      return new JsonDouble(minus ? -significand : significand);
    }
    const value = scale(significand, exp + expFrac);
    const signed = minus ? -value : value;
    return Number.isInteger(signed) || Object.is(signed, -0) ? new JsonDouble(signed) : signed;
  }

  /** Whether the integer digits from `from` up to and including the next one fit RapidJSON's 64 bits (2^63 with a minus). */
  private fits64(from: number, minus: boolean): boolean {
    const b = this.bytes;
    const digits = BigInt(Buffer.from(b.buffer, b.byteOffset + from, this.pos + 1 - from).toString('latin1'));
    return digits <= (minus ? 2n ** 63n : 2n ** 64n - 1n);
  }

  /** The integer digits from `from` to here, rounded once to a double (static_cast<double> of RapidJSON's uint64). */
  private exactInteger(from: number): number {
    const b = this.bytes;
    return Number(Buffer.from(b.buffer, b.byteOffset + from, this.pos - from).toString('latin1'));
  }
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

/** RapidJSON's StrtodNormalPrecision: the significand times (or over) one power of ten, or two below 1e-308. */
function scale(d: number, p: number): number {
  if (p < -308) {
    d = d / (POW10[308] as number);
    p += 308;
    if (p < -308) return 0;
  }
  return p >= 0 ? d * (POW10[p] ?? Infinity) : d / (POW10[-p] as number);
}

/** Parses a whole document at once (bodies small enough not to matter to the event loop). */
export function parseTritonJson(bytes: Uint8Array): unknown {
  const parser = new Parser(bytes);
  parser.run(Infinity);
  return parser.result();
}

/**
 * Parses a document `sliceBytes` at a time, letting the event loop run
 * between slices (setImmediate), so that a large body does not hold up the
 * other requests.
 */
export async function parseTritonJsonSliced(bytes: Uint8Array, sliceBytes = JSON_SLICE_BYTES): Promise<unknown> {
  const parser = new Parser(bytes);
  while (!parser.run(sliceBytes)) await new Promise((resolve) => setImmediate(resolve));
  return parser.result();
}

/** A double as RapidJSON's Writer writes it with kWriteNanAndInfFlag (Grisu2 digits, Prettify's notation). */
export function writeDouble(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return 'Infinity';
  if (v === -Infinity) return '-Infinity';
  if (v === 0) return Object.is(v, -0) ? '-0.0' : '0.0';
  const s = String(v);
  // Whole numbers below 1e21 are written in full with ".0"; JS and RapidJSON agree on where exponents start (1e21, 1e-7).
  if (Number.isInteger(v) && Math.abs(v) < 1e21) return `${s}.0`;
  return s.replace('e+', 'e');
}

/** Text that a JSON writer puts in as it is (an array of doubles written by {@link writeDouble}). */
export class RawJson {
  constructor(readonly text: string) {}
}

/**
 * JSON.stringify's output, except that a {@link RawJson} is written as its
 * text and a bigint (an integer read past 2^53) as its digits, as RapidJSON
 * writes an Int64 or Uint64 (JSON.stringify would throw). Only for answers
 * built here (no cycles, no toJSON).
 */
export function writeTritonJson(value: unknown): string {
  if (value instanceof RawJson) return value.text;
  if (typeof value === 'bigint') return String(value);
  if (Array.isArray(value)) {
    // An array of plain values (a BYTES output's strings, a shape) is what JSON.stringify writes, in one native call.
    if (value.every((v) => (typeof v !== 'object' || v === null) && typeof v !== 'bigint')) return JSON.stringify(value);
    return `[${value.map(writeTritonJson).join(',')}]`;
  }
  if (typeof value === 'object' && value !== null) {
    const members: string[] = [];
    for (const [k, v] of Object.entries(value)) if (v !== undefined) members.push(`${JSON.stringify(k)}:${writeTritonJson(v)}`);
    return `{${members.join(',')}}`;
  }
  return value === undefined ? 'null' : JSON.stringify(value);
}
