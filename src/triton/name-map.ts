import { ErrorCode, PopefError } from '../errors.js';
import { schemaErrors } from '../json-schemas.js';
import type { SourcePos } from './pbtxt-lexer.js';

/**
 * name_map.json: PopEF anchor name -> Triton tensor name, one flat object
 * (schemas/name-map.schema.json). JSON parsers keep the last of two equal
 * keys silently, so keys are read at the token level to find duplicates.
 */

export interface NameMapEntry {
  readonly anchor: string;
  readonly name: string;
  /** Where the key starts. */
  readonly at: SourcePos;
}

/** A name_map.json as read: its entries and what is wrong with its shape. */
export interface ParsedNameMap {
  /** Every key in file order, duplicates included. */
  readonly entries: readonly NameMapEntry[];
  /** Problems of shape (from the JSON Schema), as "pointer: message". */
  readonly schemaErrors: readonly string[];
}

/** Writes the map with two-space indentation, in the given order. */
export function renderNameMap(entries: readonly (readonly [string, string])[]): string {
  return `${JSON.stringify(Object.fromEntries(entries), null, 2)}\n`;
}

/**
 * Line and column (1-based) of character offsets asked in increasing order:
 * each call scans only from the previous offset, so finding every key of a
 * large map stays linear in its size.
 */
function positioner(text: string): (offset: number) => SourcePos {
  let at = 0;
  let line = 1;
  let lineStart = 0;
  return (offset) => {
    if (offset < at) {
      at = 0;
      line = 1;
      lineStart = 0;
    }
    for (; at < offset; at++) {
      if (text.charCodeAt(at) === 10) {
        line += 1;
        lineStart = at + 1;
      }
    }
    return { line, column: offset - lineStart + 1 };
  };
}

function positionOf(text: string, offset: number): SourcePos {
  return positioner(text)(offset);
}

/**
 * Parses name_map.json text. Throws E_PARSE (with line:column) when it is
 * not JSON; returns shape problems and every key, duplicates included.
 */
export function parseNameMap(text: string, file?: string): ParsedNameMap {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    const message = (error as Error).message;
    const m = /position (\d+)/.exec(message);
    const at = m === null ? undefined : positionOf(text, Number(m[1]));
    throw new PopefError(ErrorCode.Parse, `not valid JSON: ${message}`, {
      file,
      line: at?.line,
      column: at?.column,
      suggestion: 'write name_map.json as one JSON object of "anchor": "name" pairs',
    });
  }
  const entries: NameMapEntry[] = [];
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { entries, schemaErrors: schemaErrors('name-map', value) };
  // The schema's rules are checked on the walk below: ajv takes seconds over a million keys, so it
  // is asked only about a map that breaks them (its messages are the ones reported).
  let plain = true;
  // Token-level walk of the top-level object: every key in order, with the
  // string value written beside it (JSON.parse would keep only the last).
  const readString = (from: number): { raw: string; end: number } => {
    let j = from + 1;
    while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
    return { raw: text.slice(from, j + 1), end: j + 1 };
  };
  // Most keys hold no escape: their text is their value, without a JSON.parse each.
  const stringValue = (raw: string): string => (raw.includes('\\') ? (JSON.parse(raw) as string) : raw.slice(1, -1));
  const position = positioner(text);
  let i = 0;
  let depth = 0;
  let expectKey = false;
  while (i < text.length) {
    const c = text[i];
    if (c === '"') {
      const key = readString(i);
      if (depth === 1 && expectKey) {
        let j = key.end;
        for (let c = text.charCodeAt(j); c === 32 || c === 9 || c === 10 || c === 13 || c === 58; c = text.charCodeAt(j)) j += 1;
        const name = text[j] === '"' ? stringValue(readString(j).raw) : '';
        const anchor = stringValue(key.raw);
        if (anchor === '' || name === '') plain = false;
        entries.push({ anchor, name, at: position(i) });
        expectKey = false;
      }
      i = key.end;
      continue;
    }
    if (c === '{' || c === '[') {
      depth += 1;
      if (depth === 1 && c === '{') expectKey = true;
    } else if (c === '}' || c === ']') {
      depth -= 1;
    } else if (c === ',' && depth === 1) {
      expectKey = true;
    }
    i += 1;
  }
  return { entries, schemaErrors: plain ? [] : schemaErrors('name-map', value) };
}
