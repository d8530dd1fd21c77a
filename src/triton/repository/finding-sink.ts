import type { SourcePos } from '../pbtxt-lexer.js';
import { MAX_FINDINGS_PER_RULE } from './finding-limit.js';
import { RULES, type Finding, type RawFinding, type RuleId, type RuleInput, type Severity } from './findings.js';

/**
 * Where every validate rule's findings go, for one model (or for the
 * repository itself): the one place that applies `--strict` (warnings shown
 * as errors; notices stay notices), the per-rule limit (past it findings are only counted, and one
 * closing finding says how many were left out) and positions (a config path
 * looked up in the parser's positions, its nearest recorded parent when the
 * path itself has none).
 *
 * It is also where findings are folded into their cause. An error that
 * leaves an input unusable (RawFinding.unusable: no name_map.json, a config
 * that does not parse) is a cause; a later finding of one of this tool's own
 * rules that reads that input (RuleInfo.reads), in the same version where
 * the input is a version's, follows from it and is listed among the cause's
 * consequences instead of beside it. A rule that mirrors Triton is never
 * folded: its message is the one the server gives, and the one a user
 * searches a log for (test/triton/triton-oracle.test.ts reads it beside the
 * causes). Only a listed cause folds: past its rule's limit a cause is only
 * counted, and what would have followed from it is listed as usual.
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
  /** The causes in `listed`, by the input they left unusable (see causeKey). */
  readonly causes: ReadonlyMap<string, number>;
}

interface RuleCount {
  count: number;
  severity: Severity;
  file?: string;
  /** The cause (its index in `listed`) of the first finding past the limit, when it followed from one: the closing count goes there too. */
  cause?: number;
}

/** A listed finding, whose consequences the sink appends to. */
type Listed = Omit<Finding, 'consequences'> & { consequences?: Finding[] };

/** A version's name map or PopEF is that version's; an input left unusable with no version given is the whole model's. */
function causeKey(input: RuleInput, version: string | undefined): string {
  return version === undefined ? input : `${input}@${version}`;
}

/** Positions of a sink given none, or whose config's are let go (one map for all: it is never written). */
export const NO_POSITIONS: ReadonlyMap<string, SourcePos> = new Map();

export class FindingSink {
  private readonly listed: Listed[] = [];
  /** Index in `listed` of the cause that left an input unusable, by causeKey; the first cause of an input is the one kept. */
  private readonly causes = new Map<string, number>();
  /** Findings per rule, listed or not; and the severity and file of the first, for the closing count. */
  private readonly perRule = new Map<RuleId, RuleCount>();
  private readonly limit: number;
  private positions: ReadonlyMap<string, SourcePos>;

  constructor(private readonly options: SinkOptions = {}) {
    this.limit = options.limit ?? MAX_FINDINGS_PER_RULE;
    this.positions = options.positions ?? NO_POSITIONS;
  }

  /** What the sink holds so far, as plain data (see SinkState). */
  state(): SinkState {
    return { listed: this.listed, perRule: this.perRule, causes: this.causes };
  }

  /** A sink that goes on from `state` (taken by state(), perhaps in another thread). */
  static resume(options: SinkOptions, state: SinkState): FindingSink {
    const sink = new FindingSink(options);
    sink.listed.push(...state.listed.map(copyListed));
    for (const [rule, count] of state.perRule) sink.perRule.set(rule, { ...count });
    for (const [key, index] of state.causes) sink.causes.set(key, index);
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

  /** The cause `raw` follows from (its index in `listed`), if it does: see the class comment. */
  private causeOf(raw: RawFinding): number | undefined {
    const rule = RULES[raw.rule];
    if (rule.mirrors !== null) return undefined;
    for (const input of rule.reads) {
      const cause =
        this.causes.get(causeKey(input, undefined)) ?? (raw.version === undefined ? undefined : this.causes.get(causeKey(input, raw.version)));
      if (cause !== undefined) return cause;
    }
    return undefined;
  }

  /** One finding: raw (a config path or a direct position) and placed here. */
  add(raw: RawFinding): void {
    const severity = raw.severity ?? RULES[raw.rule].severity;
    // --strict raises warnings; a notice stays a notice.
    const shown: Severity = this.options.strict === true && severity === 'warning' ? 'error' : severity;
    const file = raw.file ?? this.options.configFile;
    const cause = this.causeOf(raw);
    // Past the limit only the count matters: no position to look for.
    const listed = this.listing(raw.rule);
    const seen = this.perRule.get(raw.rule) ?? { count: 0, severity: shown, ...(file === undefined ? {} : { file }) };
    seen.count += 1;
    this.perRule.set(raw.rule, seen);
    if (!listed) {
      if (seen.count === this.limit + 1 && cause !== undefined) seen.cause = cause;
      return;
    }
    const at = raw.at ?? (raw.file === undefined ? nearestPosition(this.positions, raw.path) : undefined);
    // Only an error is a cause: what follows from a cause is never worse than the cause, so exit codes stay as they were.
    const unusable = cause === undefined && shown === 'error' && raw.unusable !== undefined && raw.unusable.length > 0 ? raw.unusable : undefined;
    const finding: Listed = {
      rule: raw.rule,
      severity: shown,
      message: raw.message,
      ...(this.options.model === undefined ? {} : { model: this.options.model }),
      ...(file === undefined ? {} : { file }),
      ...(at === undefined ? {} : { line: at.line, column: at.column }),
      ...(raw.hint === undefined ? {} : { hint: raw.hint }),
      ...(unusable === undefined ? {} : { unusable: [...unusable] }),
    };
    if (cause !== undefined) {
      const into = this.listed[cause];
      if (into !== undefined) (into.consequences ??= []).push(finding);
      return;
    }
    this.listed.push(finding);
    for (const input of unusable ?? []) {
      const key = causeKey(input, input === 'config' ? undefined : raw.version);
      if (!this.causes.has(key)) this.causes.set(key, this.listed.length - 1);
    }
  }

  addAll(raws: Iterable<RawFinding>): void {
    // Rules return arrays, most of them empty: indexed, as for-of makes an iterator (and a result per step) before V8
    // optimises this, and a model passes here a dozen times (issue 26).
    if (Array.isArray(raws)) {
      const list = raws as readonly RawFinding[];
      for (let i = 0; i < list.length; i++) this.add(list[i] as RawFinding);
      return;
    }
    for (const raw of raws) this.add(raw);
  }

  /** The findings listed so far (no closing counts): for rules that look at another model's verdict. */
  listedFindings(): readonly Finding[] {
    return this.listed;
  }

  /** The findings, with one closing finding per rule that went past the limit (folded into a cause where the findings past it were). */
  close(): Finding[] {
    const out = this.listed.map(copyListed);
    const model = this.options.model;
    for (const [rule, seen] of this.perRule) {
      if (seen.count <= this.limit) continue;
      const closing: Listed = {
        rule,
        severity: seen.severity,
        message: `${seen.count - this.limit} more finding(s) of this rule ${model === undefined ? 'in the repository' : `in model '${model}'`} are not listed (${seen.count} in all)`,
        ...(model === undefined ? {} : { model }),
        ...(seen.file === undefined ? {} : { file: seen.file }),
        hint: 'fix the ones listed and run again, or list them all with --max-findings-per-rule all',
      };
      const into = seen.cause === undefined ? undefined : out[seen.cause];
      if (into === undefined) out.push(closing);
      else (into.consequences ??= []).push(closing);
    }
    return out;
  }
}

/** A listed finding with its own array of consequences, so that appending to one copy leaves the other alone. */
function copyListed(f: Finding): Listed {
  const { consequences, ...rest } = f;
  return consequences === undefined ? rest : { ...rest, consequences: [...consequences] };
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
