import type { SourcePos } from '../pbtxt-lexer.js';
import { MAX_FINDINGS_PER_RULE } from './finding-limit.js';
import { RULES, type Finding, type RawFinding, type RuleId, type Severity } from './findings.js';

/**
 * Where every validate rule's findings go, for one model (or for the
 * repository itself): the one place that applies `--strict` (warnings shown
 * as errors; notices stay notices), the per-rule limit (past it findings are only counted, and one
 * closing finding says how many were left out) and positions (a config path
 * looked up in the parser's positions, its nearest recorded parent when the
 * path itself has none).
 */

export interface SinkOptions {
  /** The model the findings belong to; undefined for repository-level findings. */
  readonly model?: string;
  readonly strict?: boolean;
  /** Findings of one rule listed (default MAX_FINDINGS_PER_RULE). */
  readonly limit?: number;
  /** The file a raw finding without `file` is about (the model's config.pbtxt). */
  readonly configFile?: string;
  /** config.pbtxt positions by config path, for raw findings with `path`. */
  readonly positions?: ReadonlyMap<string, SourcePos>;
}

/**
 * A sink's state as plain data, to cross a thread (validate's workers check
 * models and the main thread adds the repository-level rules). Positions
 * are left behind: the rules added later name no config path.
 */
export interface SinkState {
  readonly listed: readonly Finding[];
  readonly perRule: ReadonlyMap<RuleId, RuleCount>;
}

interface RuleCount {
  count: number;
  severity: Severity;
  file?: string;
}

export class FindingSink {
  private readonly listed: Finding[] = [];
  /** Findings per rule, listed or not; and the severity and file of the first, for the closing count. */
  private readonly perRule = new Map<RuleId, RuleCount>();
  private readonly limit: number;
  private positions: ReadonlyMap<string, SourcePos>;

  constructor(private readonly options: SinkOptions = {}) {
    this.limit = options.limit ?? MAX_FINDINGS_PER_RULE;
    this.positions = options.positions ?? new Map();
  }

  /** What the sink holds so far, as plain data (see SinkState). */
  state(): SinkState {
    return { listed: this.listed, perRule: this.perRule };
  }

  /** A sink that goes on from `state` (taken by state(), perhaps in another thread). */
  static resume(options: SinkOptions, state: SinkState): FindingSink {
    const sink = new FindingSink(options);
    sink.listed.push(...state.listed);
    for (const [rule, count] of state.perRule) sink.perRule.set(rule, { ...count });
    return sink;
  }

  /** The config's positions, once it is parsed. */
  setPositions(positions: ReadonlyMap<string, SourcePos>): void {
    this.positions = positions;
  }

  /** Whether a finding of `rule` added now would be listed. */
  private listing(rule: RuleId): boolean {
    return (this.perRule.get(rule)?.count ?? 0) < this.limit;
  }

  /**
   * For a rule function that returns its findings at the end: whether its
   * next finding of `rule` will be listed, counting the ones it made before,
   * so that it need not build a message no one will see.
   */
  wanted(): (rule: RuleId) => boolean {
    const made = new Map<RuleId, number>();
    return (rule) => {
      const n = (made.get(rule) ?? 0) + 1;
      made.set(rule, n);
      return (this.perRule.get(rule)?.count ?? 0) + n <= this.limit;
    };
  }

  /** One finding: raw (a config path or a direct position) and placed here. */
  add(raw: RawFinding): void {
    const severity = raw.severity ?? RULES[raw.rule].severity;
    // --strict raises warnings; a notice stays a notice.
    const shown: Severity = this.options.strict === true && severity === 'warning' ? 'error' : severity;
    const file = raw.file ?? this.options.configFile;
    // Past the limit only the count matters: no position to look for.
    const listed = this.listing(raw.rule);
    const seen = this.perRule.get(raw.rule) ?? { count: 0, severity: shown, ...(file === undefined ? {} : { file }) };
    seen.count += 1;
    this.perRule.set(raw.rule, seen);
    if (!listed) return;
    const at = raw.at ?? (raw.file === undefined ? nearestPosition(this.positions, raw.path) : undefined);
    this.listed.push({
      rule: raw.rule,
      severity: shown,
      message: raw.message,
      ...(this.options.model === undefined ? {} : { model: this.options.model }),
      ...(file === undefined ? {} : { file }),
      ...(at === undefined ? {} : { line: at.line, column: at.column }),
      ...(raw.hint === undefined ? {} : { hint: raw.hint }),
    });
  }

  addAll(raws: Iterable<RawFinding>): void {
    for (const raw of raws) this.add(raw);
  }

  /** The findings listed so far (no closing counts): for rules that look at another model's verdict. */
  listedFindings(): readonly Finding[] {
    return this.listed;
  }

  /** The findings, with one closing finding per rule that went past the limit. */
  close(): Finding[] {
    const out = [...this.listed];
    const model = this.options.model;
    for (const [rule, seen] of this.perRule) {
      if (seen.count <= this.limit) continue;
      out.push({
        rule,
        severity: seen.severity,
        message: `${seen.count - this.limit} more finding(s) of this rule ${model === undefined ? 'in the repository' : `in model '${model}'`} are not listed (${seen.count} in all)`,
        ...(model === undefined ? {} : { model }),
        ...(seen.file === undefined ? {} : { file: seen.file }),
        hint: 'fix the ones listed and run again, or list them all with --max-findings-per-rule all',
      });
    }
    return out;
  }
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
