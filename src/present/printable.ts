/**
 * Strings from a file (anchor names, handles, option values, blob names,
 * messages quoting them) reach a terminal or an XML report. A name holding
 * ESC can move the cursor, recolour or retitle the terminal; a bidi override
 * can make text read as something it is not; XML 1.0 cannot hold most
 * control characters at all. Those characters are shown as escapes instead:
 * \xNN for C0, DEL and C1 controls, \u{NNNN} for bidi controls. Tab and
 * newline stay where the context allows them.
 */

// C0 controls but tab and newline, DEL, C1 controls, and the bidi embedding, override and isolate controls.
// eslint-disable-next-line no-control-regex -- matching control characters is the point.
const UNPRINTABLE = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/g;
// eslint-disable-next-line no-control-regex -- as above, with tab and newline too.
const UNPRINTABLE_INLINE = /[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/g;

function escapeOne(c: string): string {
  const code = c.charCodeAt(0);
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u{${code.toString(16)}}`;
}

/** `text` with every unprintable character escaped; `inline` escapes tab and newline too (table cells, one-line messages). */
export function printable(text: string, inline = false): string {
  const pattern = inline ? UNPRINTABLE_INLINE : UNPRINTABLE;
  pattern.lastIndex = 0;
  if (!pattern.test(text)) return text;
  pattern.lastIndex = 0;
  return text.replace(pattern, escapeOne);
}

/**
 * The same value with every string in it made printable (inline), sharing
 * every part that needs no change: a report of a million clean anchor names
 * is checked, not copied.
 */
export function withPrintableStrings<T>(value: T): T {
  return clean(value) as T;
}

function clean(value: unknown): unknown {
  if (typeof value === 'string') return printable(value, true);
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const v: unknown = value[i];
      const c = clean(v);
      if (c !== v) {
        out ??= value.slice();
        out[i] = c;
      }
    }
    return out ?? value;
  }
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) return value;
  let out: Record<string, unknown> | undefined;
  const record = value as Record<string, unknown>;
  // for-in, not Object.entries: no [key, value] pair allocated per property
  // of a report that usually needs no change. A plain object's prototype
  // has no enumerable properties, so for-in sees only its own.
  for (const k in record) {
    const v = record[k];
    const c = clean(v);
    if (c !== v) {
      out ??= { ...record };
      out[k] = c;
    }
  }
  return out ?? value;
}
