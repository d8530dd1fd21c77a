import { PopefError } from '../../errors.js';
import type { Metadata } from '../../schema/model.js';
import { parsePbtxtPositionsOnDemand } from '../pbtxt-parser.js';
import { DEFAULT_TRITON_VERSION } from '../triton-release.js';
import { checkConfig } from './config-rules.js';
import { FindingSink } from './finding-sink.js';
import type { Finding, RawFinding } from './findings.js';
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
  /** Warnings as errors, as `popef validate --strict`. */
  readonly strict?: boolean;
}

/**
 * The findings of the config and popef/* rules for `text`, as `popef validate`
 * reports them (rule, severity, message, line:column, hint), without reading
 * any file: a parse failure is one `config/parse` finding.
 */
export function checkConfigText(text: string, options: ConfigTextCheck): Finding[] {
  const { model, file } = options;
  // The sink of every validate rule: --strict, the per-rule limit and positions, as popef validate applies them.
  const sink = new FindingSink({ model, strict: options.strict, configFile: file });
  let parsed: ReturnType<typeof parsePbtxtPositionsOnDemand>;
  try {
    parsed = parsePbtxtPositionsOnDemand(text, { file });
  } catch (error) {
    if (!(error instanceof PopefError)) throw error;
    sink.add(parseFailure(error, file));
    return sink.close();
  }
  sink.setPositions(parsed.positions);
  const checked = checkConfig(parsed.message, { name: model, tritonVersion: options.tritonVersion ?? DEFAULT_TRITON_VERSION, configPath: file });
  sink.addAll(checked.findings);
  sink.addAll(
    checkAgainstPopef(checked.normalized, options.anchorOf ?? new Map(), options.metadata, options.storedTensorNames, model, sink.wanted()),
  );
  return sink.close();
}

/** Triton's message for a config.pbtxt that does not parse, and where the parser stopped. */
export function parseFailure(error: PopefError, configPath: string): RawFinding {
  return {
    rule: 'config/parse',
    message: `failed to read text proto from ${configPath}: Error parsing text-format inference.ModelConfig: ${error.line ?? 0}:${error.column ?? 0}: ${error.message}`,
    hint: 'fix the syntax at that position (Triton fails to load the model with this message)',
    // No rule that reads the config runs on a config that does not parse.
    unusable: ['config'],
    ...(error.line === undefined ? {} : { at: { line: error.line, column: error.column ?? 0 } }),
  };
}
