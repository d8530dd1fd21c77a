import { RULES, type Finding, type RuleId } from '../triton/repository/findings.js';
import { summarizeFindings } from '../triton/repository/validate.js';
import { esc } from './html.js';
import { followLine } from './follow-line.js';
import { shownPath, type ValidateRun } from './validate-report.js';

/**
 * `popef validate --format html`: one self-contained page (no script, no
 * network) for a CI job to keep as an artifact: the summary, then each
 * model's findings grouped by severity with Triton's messages, positions
 * and hints, each rule id linking to its entry in the rule list at the end.
 * A cause's consequences are folded under it in a <details> element, which
 * opens without a script.
 */

const STYLE = `body{font:15px/1.45 system-ui,sans-serif;max-width:1100px;margin:0 auto;padding:0 1rem 3rem;color:#1b1f24;background:#fff}
h2{border-bottom:1px solid #d0d7de;margin-top:2rem}code,.where{font-family:ui-monospace,Menlo,Consolas,monospace}
.error{color:#b3261e}.warning{color:#7a4d00}.info{color:#57606a}.ok{color:#116329}.hint{color:#57606a}
li{margin:.3rem 0}details.follows{margin:.2rem 0 0 .5rem}details.follows summary{color:#57606a;cursor:pointer}table{border-collapse:collapse}th,td{border:1px solid #d0d7de;padding:.2rem .5rem;text-align:left;vertical-align:top}`;

const ORDER = ['error', 'warning', 'info'];

/** A finding's position, message, rule link and hint; then its consequences, folded. */
function findingBody(f: Finding, whereOf: (f: Finding) => string | undefined): string {
  const where = whereOf(f);
  const position =
    where === undefined ? '' : `<span class="where">${esc(f.line === undefined ? where : `${where}:${f.line}:${f.column ?? 0}`)}</span> `;
  const hint = f.hint === undefined ? '' : `<br><span class="hint">hint: ${esc(f.hint)}</span>`;
  const follow = followLine(f);
  // A consequence is not under a severity heading of its own, so it shows its severity.
  const consequences = (f.consequences ?? []).map(
    (c) => `<li><span class="${esc(c.severity)}">${esc(c.severity)}</span> ${findingBody(c, whereOf)}</li>`,
  );
  const folded = follow === undefined ? '' : `<details class="follows"><summary>${esc(follow)}</summary><ul>${consequences.join('')}</ul></details>`;
  return `${position}${esc(f.message)} <a href="#rule-${esc(f.rule)}"><code>[${esc(f.rule)}]</code></a>${hint}${folded}`;
}

function findingsBySeverity(findings: readonly Finding[], whereOf: (f: Finding) => string | undefined): string {
  const severities = [...new Set(findings.map((f) => f.severity as string))].sort((a, b) => ORDER.indexOf(a) - ORDER.indexOf(b));
  return severities
    .map((s) => {
      const group = findings.filter((f) => f.severity === s);
      return `<h4 class="${esc(s)}">${esc(`${group.length} ${s}${group.length === 1 ? '' : 's'}`)}</h4><ul>${group.map((f) => `<li>${findingBody(f, whereOf)}</li>`).join('')}</ul>`;
    })
    .join('');
}

export function renderValidateHtml(run: ValidateRun): string {
  const s = summarizeFindings(run.reports);
  const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;
  const body: string[] = [
    '<h1>popef validate</h1>',
    `<p>${esc(`${plural(s.errors, 'error')}, ${plural(s.warnings, 'warning')} in ${plural(s.models, 'model')}${s.folded === 0 ? '' : ` (${s.folded} more folded into their causes)`}`)}; Triton ${esc(run.tritonVersion)}${run.strict ? ', --strict' : ''}; popef-toolkit ${esc(run.toolVersion)}</p>`,
  ];

  run.reports.forEach((r, index) => {
    const whereOf = (f: Finding): string | undefined => shownPath(run, index, f.file);
    body.push(`<h2>${esc(run.shownRoots[index] ?? r.repository)} (${esc(plural(r.models.length, 'model'))})</h2>`);
    if (r.findings.length > 0) body.push(`<h3>(repository)</h3>${findingsBySeverity(r.findings, whereOf)}`);
    for (const m of r.models) {
      body.push(
        m.findings.length === 0
          ? `<h3>${esc(m.name)}: <span class="ok">ok</span></h3>`
          : `<h3>${esc(m.name)}</h3>${findingsBySeverity(m.findings, whereOf)}`,
      );
    }
  });
  const rules = (Object.keys(RULES) as RuleId[]).map((id) => {
    const rule = RULES[id];
    return `<tr id="rule-${esc(id)}"><td><code>${esc(id)}</code></td><td class="${esc(rule.severity)}">${esc(rule.severity)}</td><td>${rule.mirrors === null ? 'popef-toolkit' : `Triton <code>${esc(rule.mirrors)}</code>`}</td><td>${esc(rule.description)}</td></tr>`;
  });
  body.push(
    `<h2 id="rules">Rules</h2><table><caption>Every rule popef validate applies</caption><thead><tr><th scope="col">rule</th><th scope="col">severity</th><th scope="col">mirrors</th><th scope="col">what it checks</th></tr></thead><tbody>${rules.join('')}</tbody></table>`,
  );
  return `<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<meta name="generator" content="popef-toolkit validate">\n<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">\n<title>popef validate: ${esc(`${plural(s.errors, 'error')}, ${plural(s.warnings, 'warning')}`)}</title>\n<style>${STYLE}</style>\n</head>\n<body>\n<main>\n${body.join('\n')}\n</main>\n</body>\n</html>\n`;
}
