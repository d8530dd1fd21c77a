import { ErrorCode, PopefError } from '../../errors.js';
import type { ModelConfig } from '../model-config.js';
import { parseNameMap, type NameMapEntry, type ParsedNameMap } from '../name-map.js';
import type { SourcePos } from '../pbtxt-lexer.js';
import type { RawFinding } from './findings.js';

/**
 * The name-map rules: name_map.json is one JSON object of non-empty
 * strings, each anchor once and each Triton name once, and it joins the
 * config's tensors to anchors both ways. Pure: the map's text and the
 * config in, findings (and the parsed map, for the PopEF cross-check) out.
 */

/** name_map.json texts up to this length are kept once parsed; larger ones are parsed each time. */
const MAX_KEPT_TEXT = 64 * 1024;
/** Parsed maps kept per thread at most. */
const MAX_KEPT_MAPS = 1024;
const parsedByText = new Map<string, ParsedNameMap>();

/**
 * parseNameMap, once per distinct text: a repository of many copies of one
 * model (or of one export under many configs) holds the same name_map.json
 * in each (issue 26). The parse is a pure function of the text (the file
 * name appears only in its error, and failures are never kept), so a kept
 * result is the one this file's parse would give; the rules below still run
 * on it for each model, with that model's config and paths. Kept maps are
 * frozen, since every model with that text shares them.
 */
function parseNameMapOnce(text: string, file: string): ParsedNameMap {
  const kept = parsedByText.get(text);
  if (kept !== undefined) return kept;
  const parsed = parseNameMap(text, file);
  if (text.length <= MAX_KEPT_TEXT && parsedByText.size < MAX_KEPT_MAPS) {
    for (const entry of parsed.entries) Object.freeze(Object.freeze(entry).at);
    Object.freeze(parsed.entries);
    Object.freeze(parsed.schemaErrors);
    parsedByText.set(text, Object.freeze(parsed));
  }
  return parsed;
}

export interface NameMapCheck {
  /** The map, when it parses as JSON (its schema errors are findings). */
  readonly map?: ParsedNameMap;
  readonly findings: RawFinding[];
}

/**
 * `file` is the map's path relative to the repository; `model` the model's
 * name. Findings about the config (a tensor the map leaves out) carry a
 * config path and no file.
 */
export function nameMapRules(text: string, file: string, model: string, config: ModelConfig | undefined): NameMapCheck {
  // The loops below are indexed: this runs for every version of every model, before V8 optimises it, when for-of
  // makes an iterator and a result object per step (issue 26).
  const out: RawFinding[] = [];
  let parsed: ParsedNameMap;
  try {
    parsed = parseNameMapOnce(text, file);
  } catch (error) {
    if (!(error instanceof PopefError) || error.code === ErrorCode.Io || error.code === ErrorCode.LimitExceeded) throw error;
    const at = error.line === undefined ? undefined : { line: error.line, column: error.column ?? 0 };
    out.push({
      rule: 'name-map/invalid',
      message: `name_map.json is ${error.message}`,
      file,
      ...(at === undefined ? {} : { at }),
      hint: 'write one JSON object of "anchor": "name" pairs',
      unusable: ['name-map'],
    });
    return { findings: out };
  }
  for (let k = 0; k < parsed.schemaErrors.length; k++) {
    const problem = parsed.schemaErrors[k] as string;
    out.push({
      rule: 'name-map/invalid',
      message: `name_map.json does not match its schema: ${problem}`,
      file,
      hint: 'keys and values are non-empty strings (schemas/name-map.schema.json)',
      unusable: ['name-map'],
    });
  }
  const keys = new Map<string, SourcePos>();
  const values = new Map<string, string>();
  const entries = parsed.entries;
  for (let k = 0; k < entries.length; k++) {
    const e = entries[k] as NameMapEntry;
    const first = keys.get(e.anchor);
    if (first !== undefined) {
      out.push({
        rule: 'name-map/duplicate-key',
        message: `anchor "${e.anchor}" appears twice in name_map.json (first at ${first.line}:${first.column}); JSON readers keep only the last`,
        file,
        at: e.at,
        hint: 'keep one entry per anchor',
      });
      continue;
    }
    keys.set(e.anchor, e.at);
    if (e.name === '') continue;
    const other = values.get(e.name);
    if (other !== undefined)
      out.push({
        rule: 'name-map/duplicate-value',
        message: `anchors "${other}" and "${e.anchor}" are both mapped to "${e.name}"`,
        file,
        at: e.at,
        hint: 'give each anchor its own Triton name',
      });
    else values.set(e.name, e.anchor);
  }
  // With a malformed map, which tensor is which is unknown: the checks that need it would only echo the damage.
  if (config === undefined || parsed.schemaErrors.length > 0) return { map: parsed, findings: out };
  const tensors = [
    ...(config.input ?? []).map((t, i) => ({ name: t.name ?? '', path: `input[${i}]` })),
    ...(config.output ?? []).map((t, i) => ({ name: t.name ?? '', path: `output[${i}]` })),
  ];
  const tensorNames = new Set(tensors.map((t) => t.name));
  for (let k = 0; k < entries.length; k++) {
    const e = entries[k] as NameMapEntry;
    if (e.name !== '' && !tensorNames.has(e.name)) {
      out.push({
        rule: 'name-map/unknown-tensor',
        message: `name_map.json maps anchor "${e.anchor}" to "${e.name}", which is not an input or output of config.pbtxt`,
        file,
        at: e.at,
        hint: 'fix the name, or add the tensor to the config',
      });
    }
  }
  for (let k = 0; k < tensors.length; k++) {
    const t = tensors[k] as (typeof tensors)[number];
    if (t.name !== '' && !values.has(t.name)) {
      out.push({
        rule: 'name-map/unmapped-tensor',
        message: `config tensor "${t.name}" of model '${model}' is not a value in name_map.json`,
        path: t.path,
        hint: 'add "ANCHOR": "NAME" for it to name_map.json',
      });
    }
  }
  return { map: parsed, findings: out };
}

/** Config (Triton) name -> anchor name, from a usable map: the first anchor given each name. */
export function anchorsByName(map: ParsedNameMap | undefined): Map<string, string> {
  const anchorOf = new Map<string, string>();
  const entries = map?.entries ?? [];
  for (let k = 0; k < entries.length; k++) {
    const e = entries[k] as NameMapEntry;
    if (e.name !== '' && !anchorOf.has(e.name)) anchorOf.set(e.name, e.anchor);
  }
  return anchorOf;
}
