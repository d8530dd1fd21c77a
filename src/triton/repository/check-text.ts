import { PopefError } from '../../errors.js';
import type { Metadata } from '../../schema/model.js';
import type { SourcePos } from '../pbtxt-lexer.js';
import { parsePbtxt } from '../pbtxt-parser.js';
import { DEFAULT_TRITON_VERSION } from '../triton-release.js';
import { checkConfig } from './config-rules.js';
import { RULES, type Finding, type RawFinding } from './findings.js';
import { checkAgainstPopef } from './popef-rules.js';

/**
 * One config.pbtxt, given as text, checked against the PopEF it would serve:
 * the config rules and the popef/* rules of `popef validate`, with the same
 * messages and line:column positions, and no file system. The viewer page
 * checks a pasted config with it. What needs the model directory (its
 * layout, version directories, files the config names, backend libraries)
 * is not checked here, and the caller says so.
 */
export interface ConfigTextCheck {
  /** The model directory name the config is checked as (Triton compares `name:` with it). */
  readonly model: string;
  /** What messages call the file (for example `mnist/config.pbtxt`). */
  readonly file: string;
  readonly metadata: Metadata;
  readonly storedTensorNames: ReadonlySet<string>;
  /** Config tensor name -> anchor name (name_map.json); identity for names not in it. */
  readonly anchorOf?: ReadonlyMap<string, string>;
  readonly tritonVersion?: string;
  /** Every finding as an error, as `popef validate --strict`. */
  readonly strict?: boolean;
}

/**
 * The findings of the config and popef/* rules for `text`, as `popef validate`
 * reports them (rule, severity, message, line:column, hint), without reading
 * any file: a parse failure is one `config/parse` finding.
 */
export function checkConfigText(text: string, options: ConfigTextCheck): Finding[] {
  const { model, file } = options;
  let parsed: ReturnType<typeof parsePbtxt>;
  try {
    parsed = parsePbtxt(text, { file });
  } catch (error) {
    if (!(error instanceof PopefError)) throw error;
    const failure = parseFailure(error, file);
    return [finding(options, failure, failure.at)];
  }
  const checked = checkConfig(parsed.message, { name: model, tritonVersion: options.tritonVersion ?? DEFAULT_TRITON_VERSION, configPath: file });
  const raw = [
    ...checked.findings,
    ...checkAgainstPopef(checked.normalized, options.anchorOf ?? new Map(), options.metadata, options.storedTensorNames, model),
  ];
  return raw.map((f) => finding(options, f, nearestPosition(parsed.positions, f.path)));
}

/** Triton's message for a config.pbtxt that does not parse, and where the parser stopped. */
export function parseFailure(error: PopefError, configPath: string): RawFinding & { readonly at?: SourcePos } {
  return {
    rule: 'config/parse',
    message: `failed to read text proto from ${configPath}: Error parsing text-format inference.ModelConfig: ${error.line ?? 0}:${error.column ?? 0}: ${error.message}`,
    hint: 'fix the syntax at that position (Triton fails to load the model with this message)',
    ...(error.line === undefined ? {} : { at: { line: error.line, column: error.column ?? 0 } }),
  };
}

/** The position of a config path, else of its nearest parent that has one ("input[0].dims" -> "input[0]" -> "input"). */
export function nearestPosition(positions: ReadonlyMap<string, SourcePos>, path: string | undefined): SourcePos | undefined {
  for (let p = path; p !== undefined && p !== ''; p = parentPath(p)) {
    const at = positions.get(p);
    if (at !== undefined) return at;
  }
  return undefined;
}

function parentPath(path: string): string | undefined {
  return path.includes('.') || path.includes('[') ? path.replace(/(\.[^.[\]]*|\[\d+\])$/, '') : undefined;
}

function finding(options: ConfigTextCheck, f: RawFinding, at: SourcePos | undefined): Finding {
  return {
    rule: f.rule,
    severity: options.strict === true ? 'error' : (f.severity ?? RULES[f.rule].severity),
    message: f.message,
    model: options.model,
    file: options.file,
    ...(at === undefined ? {} : { line: at.line, column: at.column }),
    ...(f.hint === undefined ? {} : { hint: f.hint }),
  };
}
