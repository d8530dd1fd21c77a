/**
 * The tokenizer of protobuf's text format, as Triton reads config.pbtxt.
 * It follows the behaviour of protobuf's own tokenizer (checked against
 * protoc 3.21.12 in test/triton/protoc-differential.test.ts): positions are
 * 1-based lines and columns with tab stops every 8 columns, errors carry the
 * same wording, and an error is attached to the token during whose scan it
 * happened, so the parser can report errors in the order protoc does.
 */

export type TokenType = 'identifier' | 'integer' | 'float' | 'string' | 'symbol' | 'end';

/** A position in a text file. */
export interface SourcePos {
  /** 1-based line. */
  readonly line: number;
  /** 1-based column; a tab advances to the next multiple of 8 (0-based). */
  readonly column: number;
}

export interface LexError extends SourcePos {
  readonly message: string;
}

export interface Token extends SourcePos {
  readonly type: TokenType;
  /** The token's text as written (strings with their quotes). */
  readonly text: string;
  /** Errors found while scanning this token (or the gap before it). */
  readonly errors: readonly LexError[];
}

const TAB_WIDTH = 8;
// Byte values the scanner tests (the text holds one JS character per byte).
const TAB = 0x09;
const NEWLINE = 0x0a;
const SPACE = 0x20;
const DOUBLE_QUOTE = 0x22;
const HASH = 0x23;
const SINGLE_QUOTE = 0x27;
const PLUS = 0x2b;
const MINUS = 0x2d;
const DOT = 0x2e;
const ZERO = 0x30;
const ONE = 0x31;
const BACKSLASH = 0x5c;
const isDigit = (c: number): boolean => c >= 0x30 && c <= 0x39;
const isOctal = (c: number): boolean => c >= 0x30 && c <= 0x37;
const isHex = (c: number): boolean => isDigit(c) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46);
const isLetter = (c: number): boolean => (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || c === 0x5f;
const isWhitespace = (c: number): boolean => c === SPACE || c === NEWLINE || c === TAB || c === 0x0d || c === 0x0b || c === 0x0c;
/** a b f n r t v \ ? ' " */
const isSimpleEscape = (c: number): boolean =>
  c === 0x61 ||
  c === 0x62 ||
  c === 0x66 ||
  c === 0x6e ||
  c === 0x72 ||
  c === 0x74 ||
  c === 0x76 ||
  c === BACKSLASH ||
  c === 0x3f ||
  c === SINGLE_QUOTE ||
  c === DOUBLE_QUOTE;
const code = (c: string): number => c.charCodeAt(0);

const NO_ERRORS: readonly LexError[] = Object.freeze([]);
// eslint-disable-next-line no-control-regex -- the test is for bytes past ASCII, control bytes included in the class.
const NON_ASCII = /[^\x00-\x7f]/;

/**
 * Splits text into tokens, one at a time as the parser takes them (a 50 MB
 * config never exists as an array of millions of token objects), ending
 * with the 'end' token, which it then gives again. Never throws: problems
 * are recorded on tokens. The input is treated as a sequence of bytes
 * (UTF-8), as protobuf does, so columns count bytes.
 *
 * A class over character codes, not a generator over characters: validate
 * parses thousands of small configs in a run too short for V8 to optimize
 * the scanner, and unoptimized, each generator resume, closure and
 * one-character string cost more than the scanning itself (issue 26).
 */
export class TokenScanner {
  /** One JS character per byte (latin1) keeps the scanner byte-exact. */
  private readonly text: string;
  private i = 0;
  private line = 1;
  /** 0-based; a tab advances to the next multiple of 8. */
  private column = 0;
  private pending: LexError[] = [];
  // The token before the current one: its type, line and 0-based end column.
  private previousType: TokenType = 'end';
  private previousLine = 0;
  private previousEndColumn = 0;

  constructor(source: string | Uint8Array) {
    const bytes = typeof source === 'string' ? Buffer.from(source, 'utf8') : Buffer.from(source.buffer, source.byteOffset, source.byteLength);
    this.text = bytes.toString('latin1');
  }

  /** The byte at the cursor; 0 past the end (as protobuf's tokenizer reads a NUL there). */
  private current(): number {
    return this.i < this.text.length ? this.text.charCodeAt(this.i) : 0;
  }

  private error(message: string): void {
    this.pending.push({ line: this.line, column: this.column + 1, message });
  }

  /** Steps over one byte, keeping line and column. */
  private step(): void {
    const c = this.text.charCodeAt(this.i);
    this.i += 1;
    if (c === NEWLINE) {
      this.line += 1;
      this.column = 0;
    } else if (c === TAB) {
      this.column += TAB_WIDTH - (this.column % TAB_WIDTH);
    } else {
      this.column += 1;
    }
  }

  private tryConsume(c: number): boolean {
    if (this.i < this.text.length && this.text.charCodeAt(this.i) === c) {
      this.step();
      return true;
    }
    return false;
  }

  private tryConsumeIf(pred: (c: number) => boolean): boolean {
    if (this.i < this.text.length && pred(this.text.charCodeAt(this.i))) {
      this.step();
      return true;
    }
    return false;
  }

  /** Steps over bytes of a class that holds no tab or newline (digits, hex digits): each is one column. */
  private skipWhile(pred: (c: number) => boolean): void {
    const from = this.i;
    while (this.i < this.text.length && pred(this.text.charCodeAt(this.i))) this.i += 1;
    this.column += this.i - from;
  }

  private scanNumber(startedWithZero: boolean, startedWithDot: boolean): TokenType {
    let isFloat = false;
    if (startedWithZero && (this.tryConsume(code('x')) || this.tryConsume(code('X')))) {
      if (!this.tryConsumeIf(isHex)) this.error('"0x" must be followed by hex digits.');
      this.skipWhile(isHex);
    } else if (startedWithZero && this.i < this.text.length && isDigit(this.current())) {
      this.skipWhile(isOctal);
      if (this.i < this.text.length && isDigit(this.current())) {
        this.error('Numbers starting with leading zero must be in octal.');
        this.skipWhile(isDigit);
      }
    } else {
      if (startedWithDot) {
        isFloat = true;
        this.skipWhile(isDigit);
      } else {
        this.skipWhile(isDigit);
        if (this.tryConsume(DOT)) {
          isFloat = true;
          this.skipWhile(isDigit);
        }
      }
      if (this.tryConsume(code('e')) || this.tryConsume(code('E'))) {
        isFloat = true;
        if (!this.tryConsume(MINUS)) this.tryConsume(PLUS);
        if (!this.tryConsumeIf(isDigit)) this.error('"e" must be followed by exponent.');
        this.skipWhile(isDigit);
      }
      if (this.tryConsume(code('f')) || this.tryConsume(code('F'))) isFloat = true;
    }
    if (this.i < this.text.length && isLetter(this.current())) {
      this.error('Need space between number and identifier.');
    } else if (this.current() === DOT && this.i < this.text.length) {
      this.error(isFloat ? "Already saw decimal point or exponent; can't have another one." : 'Hex and octal numbers must be integers.');
    }
    return isFloat ? 'float' : 'integer';
  }

  private scanString(delimiter: number): void {
    const text = this.text;
    for (;;) {
      const c = this.i < text.length ? text.charCodeAt(this.i) : 0;
      // A NUL byte ends the string as the end of the text does: protobuf's tokenizer reads its end as a NUL.
      if (c === 0) {
        this.error('Unexpected end of string.');
        return;
      }
      // An ordinary printable byte (not a quote or a backslash) is one column.
      if (c >= 0x20 && c !== DOUBLE_QUOTE && c !== SINGLE_QUOTE && c !== BACKSLASH && c < 0x7f) {
        this.i += 1;
        this.column += 1;
        continue;
      }
      if (c === NEWLINE) {
        this.error('String literals cannot cross line boundaries.');
        return;
      }
      if (c === BACKSLASH) {
        this.step();
        if (this.tryConsumeIf(isSimpleEscape)) continue;
        if (this.tryConsumeIf(isOctal)) continue;
        if (this.tryConsume(code('x'))) {
          if (!this.tryConsumeIf(isHex)) this.error('Expected hex digits for escape sequence.');
          continue;
        }
        if (this.tryConsume(code('u'))) {
          if (!(this.tryConsumeIf(isHex) && this.tryConsumeIf(isHex) && this.tryConsumeIf(isHex) && this.tryConsumeIf(isHex))) {
            this.error('Expected four hex digits for \\u escape sequence.');
          }
          continue;
        }
        if (this.tryConsume(code('U'))) {
          // Eight hex digits shaped 00[01]xxxxx; values above 10ffff pass here and stay literal when decoded.
          const ok =
            this.tryConsume(ZERO) &&
            this.tryConsume(ZERO) &&
            (this.tryConsume(ZERO) || this.tryConsume(ONE)) &&
            this.tryConsumeIf(isHex) &&
            this.tryConsumeIf(isHex) &&
            this.tryConsumeIf(isHex) &&
            this.tryConsumeIf(isHex) &&
            this.tryConsumeIf(isHex);
          if (!ok) this.error('Expected eight hex digits up to 10ffff for \\U escape sequence');
          continue;
        }
        this.error('Invalid escape sequence in string literal.');
        continue;
      }
      this.step();
      if (c === delimiter) return;
    }
  }

  /** Whitespace, comments and invalid characters up to the next token. */
  private skipGap(): void {
    const text = this.text;
    while (this.i < text.length) {
      const c = text.charCodeAt(this.i);
      // Spaces and newlines, the most of a config's bytes, stepped over here rather than through step().
      if (c === SPACE) {
        this.i += 1;
        this.column += 1;
      } else if (c === NEWLINE) {
        this.i += 1;
        this.line += 1;
        this.column = 0;
      } else if (isWhitespace(c)) {
        this.step();
      } else if (c === HASH) {
        // A comment ends at a newline or a NUL byte (then read as a control character), as in protobuf's tokenizer.
        while (this.i < text.length && text.charCodeAt(this.i) !== NEWLINE && text.charCodeAt(this.i) !== 0) this.step();
      } else if (c < 32) {
        this.error('Invalid control characters encountered in text.');
        this.step();
        while (this.i < text.length && text.charCodeAt(this.i) < 32 && !isWhitespace(text.charCodeAt(this.i))) this.step();
      } else {
        return;
      }
    }
  }

  /**
   * The next token; after the end, the 'end' token again.
   *
   * Most of a config is spaces, newlines, identifiers, plain strings,
   * decimal integers and one-byte symbols: those are scanned here with the
   * cursor in local variables, and anything else (tabs, comments, escapes,
   * other numbers, bytes past ASCII, errors) is left to the byte-by-byte
   * scanners below, from the token's start (a string or number given up on
   * is scanned twice, which stays linear). Unoptimized, every read and write of a field costs an
   * inline-cache lookup, and the scan of a small config took longer than
   * the parse built on it (issue 26).
   */
  next(): Token {
    const text = this.text;
    let i = this.i;
    let line = this.line;
    let column = this.column;
    // charCodeAt past the end is NaN, which ends each loop below.
    for (let c = text.charCodeAt(i); c === SPACE || c === NEWLINE; c = text.charCodeAt(i)) {
      i += 1;
      if (c === SPACE) {
        column += 1;
      } else {
        line += 1;
        column = 0;
      }
    }
    let c = text.charCodeAt(i);
    if (c < SPACE || c === HASH) {
      // Another kind of whitespace, a comment or a control byte: the full gap scanner, from here (its errors are the token's).
      this.i = i;
      this.line = line;
      this.column = column;
      this.skipGap();
      i = this.i;
      line = this.line;
      column = this.column;
      c = text.charCodeAt(i);
    }
    const start = i;
    let type: TokenType;
    if (isLetter(c)) {
      i += 1;
      // isAlnum spelt out: a call per byte is much of the cost of unoptimized code.
      for (
        let c2 = text.charCodeAt(i);
        (c2 >= 0x61 && c2 <= 0x7a) || (c2 >= 0x41 && c2 <= 0x5a) || (c2 >= 0x30 && c2 <= 0x39) || c2 === 0x5f;
        c2 = text.charCodeAt(i)
      )
        i += 1;
      type = 'identifier';
    } else if (c === DOUBLE_QUOTE) {
      // A string of printable ASCII without escapes; anything else goes to scanString.
      i += 1;
      let c2 = text.charCodeAt(i);
      while (c2 >= SPACE && c2 < 0x7f && c2 !== DOUBLE_QUOTE && c2 !== BACKSLASH) c2 = text.charCodeAt((i += 1));
      if (c2 !== DOUBLE_QUOTE) return this.slowToken(start, line, column);
      i += 1;
      type = 'string';
    } else if (c > ZERO && c <= 0x39) {
      // A decimal integer that no '.', exponent, suffix or letter follows.
      i += 1;
      let c2 = text.charCodeAt(i);
      while (c2 >= ZERO && c2 <= 0x39) c2 = text.charCodeAt((i += 1));
      if (c2 === DOT || isLetter(c2)) return this.slowToken(start, line, column);
      type = 'integer';
    } else if (c > SPACE && c < 0x7f && c !== DOT && c !== ZERO && c !== SINGLE_QUOTE) {
      // A one-byte symbol: any printable ASCII byte not handled above, braces, brackets, ':' and ',' among them.
      i += 1;
      type = 'symbol';
    } else {
      // The end, '.', '0', a single-quoted string or a byte past ASCII.
      return this.slowToken(start, line, column);
    }
    const startColumn = column + 1;
    // The token holds no tab or newline: each byte is one column.
    column += i - start;
    this.i = i;
    this.line = line;
    this.column = column;
    this.previousType = type;
    this.previousLine = line;
    this.previousEndColumn = column;
    // Only ASCII was scanned here, which is its own UTF-8. The test for errors is spelt out: there are seldom any, and this runs per token.
    return { type, text: text.slice(start, i), line, column: startColumn, errors: this.pending.length === 0 ? NO_ERRORS : this.takeErrors() };
  }

  /** The errors found since the last token, for the token now made. */
  private takeErrors(): readonly LexError[] {
    if (this.pending.length === 0) return NO_ERRORS;
    const errors = this.pending;
    this.pending = [];
    return errors;
  }

  /**
   * The token at `start` (after the gap, at `line` and 0-based `column`),
   * scanned byte by byte: every kind but identifiers, which next() always
   * scans itself, errors included.
   */
  private slowToken(start: number, line: number, column: number): Token {
    this.i = start;
    this.line = line;
    this.column = column;
    const text = this.text;
    const startLine = line;
    const startColumn = column + 1;
    let type: TokenType;
    if (this.i >= text.length) {
      type = 'end';
    } else {
      const c = text.charCodeAt(this.i);
      if (c === ZERO) {
        this.step();
        type = this.scanNumber(true, false);
      } else if (isDigit(c)) {
        this.step();
        type = this.scanNumber(false, false);
      } else if (c === DOT) {
        this.step();
        if (this.i < text.length && isDigit(this.current())) {
          // "blah.123" is refused: a float may not touch the identifier before it.
          if (this.previousType === 'identifier' && this.previousLine === startLine && this.previousEndColumn === startColumn - 1) {
            this.pending.push({ line: startLine, column: startColumn, message: 'Need space between identifier and decimal point.' });
          }
          type = this.scanNumber(false, true);
        } else {
          type = 'symbol';
        }
      } else if (c === DOUBLE_QUOTE || c === SINGLE_QUOTE) {
        this.step();
        this.scanString(c);
        type = 'string';
      } else {
        if (c >= 128) this.error(`Interpreting non ascii codepoint ${c}.`);
        this.step();
        type = 'symbol';
      }
    }
    const raw = text.slice(start, this.i);
    const errors = this.takeErrors();
    this.previousType = type;
    this.previousLine = this.line;
    this.previousEndColumn = this.column;
    return {
      type,
      // Only strings and stray symbols can hold bytes past ASCII; ASCII text is its own UTF-8.
      text:
        (type === 'string' || (type === 'symbol' && raw.charCodeAt(0) >= 0x80)) && NON_ASCII.test(raw)
          ? Buffer.from(raw, 'latin1').toString('utf8')
          : raw,
      line: startLine,
      column: startColumn,
      errors,
    };
  }
}

/** Every token of `source`, the 'end' token last. */
export function tokenize(source: string | Uint8Array): Token[] {
  const scanner = new TokenScanner(source);
  const tokens: Token[] = [];
  for (;;) {
    const token = scanner.next();
    tokens.push(token);
    if (token.type === 'end') return tokens;
  }
}

/**
 * Decodes a string token (quotes included) into bytes, as protobuf's
 * tokenizer does: octal escapes keep their low 8 bits, \u and \U become
 * UTF-8 (a surrogate pair in two \u escapes becomes one code point).
 */
export function unescapeString(token: string): Uint8Array {
  const text = Buffer.from(token, 'utf8').toString('latin1');
  const out: number[] = [];
  const pushUtf8 = (cp: number): void => {
    if (cp < 0x80) out.push(cp);
    else if (cp < 0x800) out.push(0xc0 | (cp >> 6), 0x80 | (cp & 0x3f));
    else if (cp < 0x10000) out.push(0xe0 | (cp >> 12), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f));
    else out.push(0xf0 | (cp >> 18), 0x80 | ((cp >> 12) & 0x3f), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f));
  };
  const quote = text[0];
  let i = 1;
  const end = text.length > 1 && text[text.length - 1] === quote ? text.length - 1 : text.length;
  const simple: Record<string, number> = { a: 7, b: 8, f: 12, n: 10, r: 13, t: 9, v: 11, '\\': 92, '?': 63, "'": 39, '"': 34 };
  const hexRun = (max: number): string => {
    let s = '';
    while (s.length < max && i < end && isHex(text.charCodeAt(i))) s += text[i++] ?? '';
    return s;
  };
  while (i < end) {
    const c = text[i] ?? '';
    if (c !== '\\') {
      out.push(c.charCodeAt(0));
      i += 1;
      continue;
    }
    i += 1;
    const e = text[i] ?? '';
    if (e in simple) {
      out.push(simple[e] ?? 0);
      i += 1;
    } else if (isOctal(code(e))) {
      let s = '';
      while (s.length < 3 && i < end && isOctal(text.charCodeAt(i))) s += text[i++] ?? '';
      out.push(parseInt(s, 8) & 0xff);
    } else if (e === 'x') {
      i += 1;
      out.push(parseInt(hexRun(2), 16));
    } else if (e === 'u') {
      i += 1;
      let cp = parseInt(hexRun(4), 16);
      // A high surrogate followed by \u and a low surrogate is one code point.
      if (cp >= 0xd800 && cp <= 0xdbff && text[i] === '\\' && text[i + 1] === 'u') {
        const low = parseInt(text.slice(i + 2, i + 6), 16);
        if (low >= 0xdc00 && low <= 0xdfff) {
          cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
          i += 6;
        }
      }
      pushUtf8(cp);
    } else if (e === 'U') {
      i += 1;
      const digits = hexRun(8);
      const cp = parseInt(digits, 16);
      // protobuf copies an out-of-range \U escape through unchanged.
      if (cp > 0x10ffff) for (const ch of `\\U${digits}`) out.push(ch.charCodeAt(0));
      else pushUtf8(cp);
    } else {
      i += 1;
    }
  }
  return Uint8Array.from(out);
}
