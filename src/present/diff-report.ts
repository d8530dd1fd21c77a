import type { Colour } from './colour.js';
import type { Change, DiffReport } from '../inspect/diff.js';

const show = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v));

function line(c: Change): string {
  if (c.change === 'added') return `+ ${c.subject}${c.after === undefined ? '' : ` ${show(c.after)}`}`;
  if (c.change === 'removed') return `- ${c.subject}${c.before === undefined ? '' : ` ${show(c.before)}`}`;
  return `~ ${c.subject}: ${c.field ?? ''} ${show(c.before)} -> ${show(c.after)}`;
}

export function renderDiffText(r: DiffReport, c: Colour): string {
  const out = [c.bold(`--- a: ${r.a.join(' + ')}`), c.bold(`+++ b: ${r.b.join(' + ')}`)];
  for (const change of r.changes) {
    const text = line(change);
    out.push(change.change === 'added' ? c.green(text) : change.change === 'removed' ? c.red(text) : c.yellow(text));
  }
  const ignored = r.ignored.length > 0 ? ` (ignoring ${r.ignored.join(', ')})` : '';
  out.push(r.identical ? `identical${ignored}` : `${r.changes.length} difference${r.changes.length === 1 ? '' : 's'}${ignored}`);
  return `${out.join('\n')}\n`;
}

function cell(v: unknown): string {
  return v === undefined ? '' : `\`${show(v).replace(/\|/g, '\\|').replace(/`/g, "'")}\``;
}

export function renderDiffMarkdown(r: DiffReport): string {
  const out = [`## PopEF diff`, '', `- a: ${r.a.map((x) => `\`${x}\``).join(', ')}`, `- b: ${r.b.map((x) => `\`${x}\``).join(', ')}`, ''];
  if (r.identical) {
    out.push('No differences.');
  } else {
    out.push('| | What | Field | Before | After |', '|---|---|---|---|---|');
    for (const c of r.changes) {
      const mark = c.change === 'added' ? 'added' : c.change === 'removed' ? 'removed' : 'changed';
      out.push(`| ${mark} | ${c.subject.replace(/\|/g, '\\|')} | ${c.field ?? ''} | ${cell(c.before)} | ${cell(c.after)} |`);
    }
    out.push('', `${r.changes.length} difference(s).`);
  }
  if (r.ignored.length > 0) out.push('', `Ignored: ${r.ignored.map((x) => `\`${x}\``).join(', ')}.`);
  return `${out.join('\n')}\n`;
}
