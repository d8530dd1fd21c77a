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
const isDigit = (c: string): boolean => c >= '0' && c <= '9';
const isOctal = (c: string): boolean => c >= '0' && c <= '7';
const isHex = (c: string): boolean => isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
const isLetter = (c: string): boolean => (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c === '_';
const isWhitespace = (c: string): boolean => c === ' ' || c === '\n' || c === '\t' || c === '\r' || c === '\v' || c === '\f';
const SPACE = 0x20;
const NEWLINE = 0x0a;
const isDigitCode = (c: number): boolean => c >= 0x30 && c <= 0x39;
const isAlnumCode = (c: number): boolean => (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || c === 0x5f || isDigitCode(c);
const SIMPLE_ESCAPES = new Set(['a', 'b', 'f', 'n', 'r', 't', 'v', '\\', '?', "'", '"']);

/**
 * Splits text into tokens. Never throws: problems are recorded on tokens.
 * The input is treated as a sequence of bytes (UTF-8), as protobuf does, so
 * columns count bytes.
 */
export function tokenize(source: string | Uint8Array): Token[] {
  return [...scanTokens(source)];
}

const NO_ERRORS: readonly LexError[] = Object.freeze([]);
// eslint-disable-next-line no-control-regex -- the test is for bytes past ASCII, control bytes included in the class.
const NON_ASCII = /[^\x00-\x7f]/;

/**
 * The tokens of `source` one at a time, ending with the 'end' token. The
 * parser takes them as it goes, so a 50 MB config never exists as an array
 * of millions of token objects.
 */
export function* scanTokens(source: string | Uint8Array): Generator<Token, void, undefined> {
  const bytes = typeof source === 'string' ? Buffer.from(source, 'utf8') : Buffer.from(source.buffer, source.byteOffset, source.byteLength);
  // One JS character per byte (latin1) keeps the scanner byte-exact.
  const text = bytes.toString('latin1');
  let i = 0;
  let line = 1;
  let column = 0;
  let pending: LexError[] = [];
  // The token before the current one: its type, line and 0-based end column (three locals, not an object per token).
  let previousType: TokenType = 'end';
  let previousLine = 0;
  let previousEndColumn = 0;
  const cur = (): string => (i < text.length ? (text[i] ?? '\0') : '\0');
  const error = (message: string): void => {
    pending.push({ line, column: column + 1, message });
  };
  const next = (): void => {
    const c = text[i];
    i += 1;
    if (c === '\n') {
      line += 1;
      column = 0;
    } else if (c === '\t') {
      column += TAB_WIDTH - (column % TAB_WIDTH);
    } else {
      column += 1;
    }
  };
  const tryConsume = (c: string): boolean => {
    if (i < text.length && text[i] === c) {
      next();
      return true;
    }
    return false;
  };
  const tryConsumeIf = (pred: (c: string) => boolean): boolean => {
    if (i < text.length && pred(cur())) {
      next();
      return true;
    }
    return false;
  };
  const consumeZeroOrMore = (pred: (c: string) => boolean): void => {
    while (tryConsumeIf(pred));
  };

  /** consumeZeroOrMore(isDigit) without a call per byte: a digit is one column. */
  const skipDigits = (): void => {
    const from = i;
    while (i < text.length && isDigitCode(text.charCodeAt(i))) i += 1;
    column += i - from;
  };

  const scanNumber = (startedWithZero: boolean, startedWithDot: boolean): TokenType => {
    let isFloat = false;
    if (startedWithZero && (tryConsume('x') || tryConsume('X'))) {
      if (!tryConsumeIf(isHex)) error('"0x" must be followed by hex digits.');
      consumeZeroOrMore(isHex);
    } else if (startedWithZero && i < text.length && isDigit(cur())) {
      consumeZeroOrMore(isOctal);
      if (i < text.length && isDigit(cur())) {
        error('Numbers starting with leading zero must be in octal.');
        consumeZeroOrMore(isDigit);
      }
    } else {
      if (startedWithDot) {
        isFloat = true;
        consumeZeroOrMore(isDigit);
      } else {
        skipDigits();
        if (tryConsume('.')) {
          isFloat = true;
          consumeZeroOrMore(isDigit);
        }
      }
      if (tryConsume('e') || tryConsume('E')) {
        isFloat = true;
        if (!tryConsume('-')) tryConsume('+');
        if (!tryConsumeIf(isDigit)) error('"e" must be followed by exponent.');
        consumeZeroOrMore(isDigit);
      }
      if (tryConsume('f') || tryConsume('F')) isFloat = true;
    }
    if (i < text.length && isLetter(cur())) {
      error('Need space between number and identifier.');
    } else if (cur() === '.' && i < text.length) {
      error(isFloat ? "Already saw decimal point or exponent; can't have another one." : 'Hex and octal numbers must be integers.');
    }
    return isFloat ? 'float' : 'integer';
  };

  const scanString = (delimiter: string): void => {
    for (;;) {
      if (i >= text.length) {
        error('Unexpected end of string.');
        return;
      }
      const code = text.charCodeAt(i);
      // An ordinary printable byte (not a quote or a backslash) is one column.
      if (code >= 0x20 && code !== 0x22 && code !== 0x27 && code !== 0x5c && code < 0x7f) {
        i += 1;
        column += 1;
        continue;
      }
      const c = cur();
      if (c === '\n') {
        error('String literals cannot cross line boundaries.');
        return;
      }
      if (c === '\\') {
        next();
        if (tryConsumeIf((x) => SIMPLE_ESCAPES.has(x))) continue;
        if (tryConsumeIf(isOctal)) continue;
        if (tryConsume('x')) {
          if (!tryConsumeIf(isHex)) error('Expected hex digits for escape sequence.');
          continue;
        }
        if (tryConsume('u')) {
          if (!(tryConsumeIf(isHex) && tryConsumeIf(isHex) && tryConsumeIf(isHex) && tryConsumeIf(isHex))) {
            error('Expected four hex digits for \\u escape sequence.');
          }
          continue;
        }
        if (tryConsume('U')) {
          // Eight hex digits shaped 00[01]xxxxx; values above 10ffff pass here and stay literal when decoded.
          const ok =
            tryConsume('0') &&
            tryConsume('0') &&
            (tryConsume('0') || tryConsume('1')) &&
            tryConsumeIf(isHex) &&
            tryConsumeIf(isHex) &&
            tryConsumeIf(isHex) &&
            tryConsumeIf(isHex) &&
            tryConsumeIf(isHex);
          if (!ok) error('Expected eight hex digits up to 10ffff for \\U escape sequence');
          continue;
        }
        error('Invalid escape sequence in string literal.');
        continue;
      }
      if (c === delimiter) {
        next();
        return;
      }
      next();
    }
  };

  for (;;) {
    // Whitespace, comments and invalid characters between tokens.
    for (;;) {
      if (i >= text.length) break;
      // Spaces and newlines, the most of a config's bytes, stepped over here rather than through next().
      const code = text.charCodeAt(i);
      if (code === SPACE) {
        i += 1;
        column += 1;
        continue;
      }
      if (code === NEWLINE) {
        i += 1;
        line += 1;
        column = 0;
        continue;
      }
      const c = cur();
      if (isWhitespace(c)) {
        next();
      } else if (c === '#') {
        while (i < text.length && cur() !== '\n') next();
      } else if (c.charCodeAt(0) < 32) {
        error('Invalid control characters encountered in text.');
        next();
        while (i < text.length && cur().charCodeAt(0) < 32 && !isWhitespace(cur())) next();
      } else {
        break;
      }
    }
    const startLine = line;
    const startColumn = column + 1;
    const start = i;
    let type: TokenType;
    if (i >= text.length) {
      type = 'end';
    } else {
      const c = cur();
      if (isLetter(c)) {
        // An identifier holds no tab or newline: each byte is one column.
        const from = i;
        i += 1;
        while (i < text.length && isAlnumCode(text.charCodeAt(i))) i += 1;
        column += i - from;
        type = 'identifier';
      } else if (c === '0') {
        next();
        type = scanNumber(true, false);
      } else if (isDigit(c)) {
        next();
        type = scanNumber(false, false);
      } else if (c === '.') {
        next();
        if (i < text.length && isDigit(cur())) {
          // "blah.123" is refused: a float may not touch the identifier before it.
          if (previousType === 'identifier' && previousLine === startLine && previousEndColumn === startColumn - 1) {
            pending.push({ line: startLine, column: startColumn, message: 'Need space between identifier and decimal point.' });
          }
          type = scanNumber(false, true);
        } else {
          type = 'symbol';
        }
      } else if (c === '"' || c === "'") {
        next();
        scanString(c);
        type = 'string';
      } else {
        if (c.charCodeAt(0) >= 128) error(`Interpreting non ascii codepoint ${c.charCodeAt(0)}.`);
        next();
        type = 'symbol';
      }
    }
    const raw = text.slice(start, i);
    yield {
      type,
      // Only strings and stray symbols can hold bytes past ASCII; ASCII text is its own UTF-8.
      text: (type === 'string' || type === 'symbol') && NON_ASCII.test(raw) ? Buffer.from(raw, 'latin1').toString('utf8') : raw,
      line: startLine,
      column: startColumn,
      errors: pending.length === 0 ? NO_ERRORS : pending,
    };
    if (pending.length > 0) pending = [];
    previousType = type;
    previousLine = line;
    previousEndColumn = column;
    if (type === 'end') return;
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
    while (s.length < max && i < end && isHex(text[i] ?? '')) s += text[i++] ?? '';
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
    } else if (isOctal(e)) {
      let s = '';
      while (s.length < 3 && i < end && isOctal(text[i] ?? '')) s += text[i++] ?? '';
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
