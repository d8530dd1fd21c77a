import type { Colour } from './colour.js';
import { join } from 'node:path';
import { followLine } from './follow-line.js';
import { printable } from './printable.js';
import { REPOSITORY_ONLY_RULES, REPOSITORY_RULES, RULES, type Finding, type RuleId, type RuleInput } from '../triton/repository/findings.js';
import { summarizeFindings, type RepositoryReport } from '../triton/repository/validate.js';

/**
 * Renderings of `popef validate` results: text for people, JSON for
 * scripts, JUnit XML and SARIF 2.1.0 for CI systems, and GitHub Actions
 * workflow commands. Paths are shown as the user gave the repository.
 */

export interface ValidateRun {
  readonly reports: readonly RepositoryReport[];
  /** The repository paths as given on the command line, in the same order. */
  readonly shownRoots: readonly string[];
  readonly tritonVersion: string;
  readonly strict: boolean;
  readonly toolVersion: string;
  /** Text lists each cause's consequences under it (else it says how many there are). */
  readonly verbose?: boolean;
}

export function shownPath(run: ValidateRun, index: number, file: string | undefined): string | undefined {
  return file === undefined ? undefined : join(run.shownRoots[index] ?? '', file);
}

function location(f: Finding, path: string | undefined): string {
  if (path === undefined) return '';
  return f.line === undefined ? `${path}: ` : `${path}:${f.line}:${f.column ?? 0}: `;
}

function summaryLine(run: ValidateRun): string {
  const s = summarizeFindings(run.reports);
  const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;
  const folded = s.folded === 0 ? '' : ` (${s.folded} more folded)`;
  const unchecked = s.notCrossChecked === 0 ? '' : `; ${s.notCrossChecked} of them not cross-checked against a PopEF`;
  return `${plural(s.errors, 'error')}, ${plural(s.warnings, 'warning')} in ${plural(s.models, 'model')}${folded}${unchecked}`;
}

export function renderValidateText(run: ValidateRun, c: Colour): string {
  const out: string[] = [];
  run.reports.forEach((r, index) => {
    out.push(
      c.bold(`${run.shownRoots[index] ?? r.repository} (${r.models.length} model${r.models.length === 1 ? '' : 's'}, Triton ${run.tritonVersion})`),
    );
    const line = (f: Finding, indent = '    '): void => {
      const severity = f.severity === 'error' ? c.red('error') : f.severity === 'warning' ? c.yellow('warning') : c.cyan('note');
      out.push(`${indent}${location(f, shownPath(run, index, f.file))}${severity}: ${f.message} ${c.dim(`[${f.rule}]`)}`);
      if (f.hint !== undefined) out.push(`${indent}  ${c.dim(`hint: ${f.hint}`)}`);
      const follow = followLine(f);
      if (follow === undefined) return;
      if (run.verbose !== true) {
        out.push(`${indent}  ${follow} (--verbose lists them)`);
        return;
      }
      out.push(`${indent}  ${follow}:`);
      for (const g of f.consequences ?? []) line(g, `${indent}    `);
    };
    if (r.findings.length > 0) {
      out.push('  (repository)');
      for (const f of r.findings) line(f);
    }
    for (const m of r.models) {
      if (m.findings.length === 0) {
        out.push(`  ${m.name}: ${c.green('ok')}`);
        continue;
      }
      out.push(`  ${m.name}`);
      for (const f of m.findings) line(f);
    }
  });
  out.push(summaryLine(run));
  return `${out.join('\n')}\n`;
}

export function validateJson(run: ValidateRun): unknown {
  return {
    tool: 'popef-toolkit',
    reportVersion: 1,
    tritonVersion: run.tritonVersion,
    strict: run.strict,
    repositories: run.reports.map((r, index) => ({
      path: run.shownRoots[index] ?? r.repository,
      findings: r.findings,
      models: r.models.map((m) => ({ name: m.name, findings: m.findings })),
    })),
    summary: summarizeFindings(run.reports),
  };
}

/** Lone surrogates and the two non-characters XML 1.0 excludes (printable() handles the controls). */
const NOT_XML = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]|[\ufffe\uffff]/g;

/** Text for XML 1.0 content or attributes: markup escaped, and the control characters XML cannot hold shown as escapes. */
function xml(text: string): string {
  return printable(text)
    .replace(NOT_XML, (c) => `\\u{${c.charCodeAt(0).toString(16)}}`)
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;');
}

const INPUT_NAMES: Record<RuleInput, string> = { config: 'the config', 'name-map': 'the name map', popef: 'the PopEF' };

/**
 * Why `rule` could not run for a group, if it could not: a cause left an
 * input it reads unusable, or (for the rules that read the PopEF) no PopEF
 * was read. Its own findings, if any, are then among the cause's consequences.
 */
function notRun(rule: RuleId, findings: readonly Finding[], popefSkipped: string | undefined): string | undefined {
  const reads: readonly RuleInput[] = RULES[rule].reads;
  for (const cause of findings) {
    const inputs = (cause.unusable ?? []).filter((i) => reads.includes(i));
    if (cause.rule === rule || inputs.length === 0) continue;
    const names = inputs.map((i) => INPUT_NAMES[i]);
    const what = names.length === 1 ? names.join('') : `${names.slice(0, -1).join(', ')} and ${names.at(-1) ?? ''}`;
    return `not run: ${what} ${inputs.length === 1 ? 'is' : 'are'} not usable (${cause.message} [${cause.rule}])`;
  }
  // The notice that the cross-check was not done is not a pass where the PopEF was not read: --require-popef reports
  // it as layout/popef-missing, an unreadable PopEF as popef/unreadable.
  return popefSkipped !== undefined && (reads.includes('popef') || rule === 'popef/not-cross-checked') ? `not run: ${popefSkipped}` : undefined;
}

/** JUnit XML: one test case per model and rule, failing on that rule's errors, skipped (with the reason) where it could not run. */
export function renderJunit(run: ValidateRun): string {
  const ruleIds = Object.keys(RULES) as RuleId[];
  const repositoryRuleIds = ruleIds.filter((rule) => REPOSITORY_RULES.has(rule));
  const modelRuleIds = ruleIds.filter((rule) => !REPOSITORY_ONLY_RULES.has(rule));
  const suites: string[] = [];
  let tests = 0;
  let failures = 0;
  let skippedCount = 0;
  run.reports.forEach((r, index) => {
    const root = run.shownRoots[index] ?? r.repository;
    // The repository's suite holds the repository's own rules; a model's, every rule that can be a model's.
    const groups: { name: string; rules: readonly RuleId[]; findings: readonly Finding[]; popefSkipped?: string }[] = [
      { name: '(repository)', rules: repositoryRuleIds, findings: r.findings },
      ...r.models.map((m) => ({
        name: m.name,
        rules: modelRuleIds,
        findings: m.findings,
        ...(m.popefSkipped === undefined ? {} : { popefSkipped: m.popefSkipped }),
      })),
    ];
    for (const g of groups) {
      const cases: string[] = [];
      let suiteFailures = 0;
      let suiteSkipped = 0;
      for (const rule of g.rules) {
        const hits = g.findings.filter((f) => f.rule === rule);
        const folded = g.findings.flatMap((f) => (f.consequences ?? []).filter((c) => c.rule === rule).map((c) => ({ cause: f, c })));
        const errors = hits.filter((f) => f.severity === 'error');
        const warnings = hits.filter((f) => f.severity === 'warning');
        const notices = hits.filter((f) => f.severity === 'info');
        const body: string[] = [];
        // A rule that could not run is skipped, with the reason, not passed: the notice itself, and the rules that read what a cause left unusable.
        const skipped = errors.length > 0 ? undefined : (notices[0]?.message ?? notRun(rule, g.findings, g.popefSkipped));
        if (skipped !== undefined) {
          suiteSkipped += 1;
          body.push(`      <skipped message="${xml(skipped)}"/>`);
        }
        // What it found anyway follows from the cause: shown, never a failure of its own.
        if (folded.length > 0) {
          body.push(
            `      <system-out>${xml(folded.map(({ cause, c }) => `follows from [${cause.rule}]: ${c.severity}: ${location(c, shownPath(run, index, c.file))}${c.message}`).join('\n'))}</system-out>`,
          );
        }
        if (errors.length > 0) {
          suiteFailures += 1;
          const text = errors
            .map((f) => {
              const hint = f.hint === undefined ? '' : `\nhint: ${f.hint}`;
              const follow = followLine(f);
              const consequences =
                follow === undefined
                  ? ''
                  : `\n${follow}:${(f.consequences ?? []).map((c) => `\n  ${c.severity}: ${location(c, shownPath(run, index, c.file))}${c.message} [${c.rule}]`).join('')}`;
              return `${location(f, shownPath(run, index, f.file))}${f.message}${hint}${consequences}`;
            })
            .join('\n');
          body.push(`      <failure type="error" message="${xml(errors[0]?.message ?? '')}">${xml(text)}</failure>`);
        }
        if (warnings.length > 0) {
          body.push(
            `      <system-out>${xml(warnings.map((f) => `warning: ${location(f, shownPath(run, index, f.file))}${f.message}`).join('\n'))}</system-out>`,
          );
        }
        const open = `    <testcase classname="${xml(`${root}/${g.name}`)}" name="${rule}"`;
        cases.push(body.length === 0 ? `${open}/>` : `${open}>\n${body.join('\n')}\n    </testcase>`);
      }
      tests += g.rules.length;
      failures += suiteFailures;
      skippedCount += suiteSkipped;
      suites.push(
        `  <testsuite name="${xml(`${root}/${g.name}`)}" tests="${g.rules.length}" failures="${suiteFailures}" errors="0" skipped="${suiteSkipped}">\n${cases.join('\n')}\n  </testsuite>`,
      );
    }
  });
  return `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="popef validate" tests="${tests}" failures="${failures}" errors="0" skipped="${skippedCount}">\n${suites.join('\n')}\n</testsuites>\n`;
}

/** SARIF's levels: a notice is a `note`. */
function sarifLevel(severity: Finding['severity']): 'error' | 'warning' | 'note' {
  return severity === 'info' ? 'note' : severity;
}

/** A SARIF physicalLocation for a finding's file and position; none when it names no file. */
function physicalLocation(f: Finding, uri: string | undefined): object | undefined {
  if (uri === undefined) return undefined;
  return {
    artifactLocation: { uri: uri.split('\\').join('/') },
    ...(f.line === undefined ? {} : { region: { startLine: f.line, startColumn: Math.max(1, f.column ?? 1) } }),
  };
}

/**
 * SARIF 2.1.0: one run, every rule described, each finding a result with
 * file and region. A cause's consequences are its relatedLocations (each
 * with its rule and message), not results of their own: a code-scanning
 * view shows one alert per cause.
 */
export function validateSarif(run: ValidateRun): unknown {
  const results = run.reports.flatMap((r, index) =>
    [...r.findings, ...r.models.flatMap((m) => m.findings)].map((f) => {
      const where = physicalLocation(f, shownPath(run, index, f.file));
      const follow = followLine(f);
      const text = `${f.message}${f.hint === undefined ? '' : ` (hint: ${f.hint})`}${follow === undefined ? '' : ` (${follow}, listed as its related locations)`}`;
      const related = (f.consequences ?? []).map((c, id) => {
        const at = physicalLocation(c, shownPath(run, index, c.file));
        return { id, message: { text: `${c.severity}: ${c.message} [${c.rule}]` }, ...(at === undefined ? {} : { physicalLocation: at }) };
      });
      return {
        ruleId: f.rule,
        level: sarifLevel(f.severity),
        message: { text },
        ...(where === undefined ? {} : { locations: [{ physicalLocation: where }] }),
        ...(related.length === 0 ? {} : { relatedLocations: related }),
      };
    }),
  );
  return {
    $schema: 'https://json.schemastore.org/sarif-2.1.0.json',
    version: '2.1.0',
    runs: [
      {
        tool: {
          driver: {
            name: 'popef-toolkit',
            version: run.toolVersion,
            rules: (Object.entries(RULES) as [RuleId, (typeof RULES)[RuleId]][]).map(([id, info]) => ({
              id,
              shortDescription: { text: info.description },
              defaultConfiguration: { level: run.strict && info.severity === 'warning' ? 'error' : sarifLevel(info.severity) },
            })),
          },
        },
        results,
      },
    ],
  };
}

function escapeData(text: string): string {
  return text.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
}

function escapeProperty(text: string): string {
  return escapeData(text).replace(/:/g, '%3A').replace(/,/g, '%2C');
}

/** GitHub Actions workflow commands: annotations on the files and lines, one per cause (its text says how many follow from it). */
export function renderGithub(run: ValidateRun): string {
  const lines: string[] = [];
  run.reports.forEach((r, index) => {
    for (const f of [...r.findings, ...r.models.flatMap((m) => m.findings)]) {
      const props: string[] = [];
      const path = shownPath(run, index, f.file);
      if (path !== undefined) props.push(`file=${escapeProperty(path)}`);
      if (f.line !== undefined) props.push(`line=${f.line}`, `col=${f.column ?? 1}`);
      props.push(`title=${escapeProperty(`popef validate ${f.rule}`)}`);
      const follow = followLine(f);
      const message = `${f.message}${f.hint === undefined ? '' : `\nhint: ${f.hint}`}${follow === undefined ? '' : `\n${follow} (popef validate --verbose lists them)`}`;
      lines.push(`::${f.severity === 'info' ? 'notice' : f.severity} ${props.join(',')}::${escapeData(message)}`);
    }
  });
  lines.push(summaryLine(run));
  return `${lines.join('\n')}\n`;
}
