import type { Colour } from './colour.js';
import type { Change, DiffReport, SameContent } from '../inspect/diff.js';
import { humanBytes } from './human-bytes.js';

const show = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v));

function line(c: Change): string {
  if (c.change === 'added') return `+ ${c.subject}${c.after === undefined ? '' : ` ${show(c.after)}`}`;
  if (c.change === 'removed') return `- ${c.subject}${c.before === undefined ? '' : ` ${show(c.before)}`}`;
  return `~ ${c.subject}: ${c.field ?? ''} ${show(c.before)} -> ${show(c.after)}`;
}

/** The fields in which two blobs that hold the same bytes can differ. */
const STORAGE_FIELDS = new Set(['size', 'crc32', 'compression']);

function sameContentLine(s: SameContent): string {
  return `= ${s.subject}: the same ${humanBytes(s.bytes)} on both sides once inflated (CRC-32 ${s.crc32}); only how they are stored differs (compression ${s.compression.a} -> ${s.compression.b})`;
}

/** Whether every change is one of how the same bytes are stored. */
function onlyStorage(r: DiffReport): boolean {
  const same = new Set((r.sameContent ?? []).map((s) => s.subject));
  return same.size > 0 && r.changes.every((ch) => ch.change === 'changed' && same.has(ch.subject) && STORAGE_FIELDS.has(ch.field ?? ''));
}

export function renderDiffText(r: DiffReport, c: Colour): string {
  const out = [c.bold(`--- a: ${r.a.join(' + ')}`), c.bold(`+++ b: ${r.b.join(' + ')}`)];
  for (const change of r.changes) {
    const text = line(change);
    out.push(change.change === 'added' ? c.green(text) : change.change === 'removed' ? c.red(text) : c.yellow(text));
  }
  for (const s of r.sameContent ?? []) out.push(sameContentLine(s));
  const ignored = r.ignored.length > 0 ? ` (ignoring ${r.ignored.join(', ')})` : '';
  const count = `${r.changes.length} difference${r.changes.length === 1 ? '' : 's'}`;
  out.push(r.identical ? `identical${ignored}` : `${count}${onlyStorage(r) ? ', all in how the same bytes are stored' : ''}${ignored}`);
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
    for (const same of r.sameContent ?? []) out.push('', sameContentLine(same).slice(2));
    out.push('', `${r.changes.length} difference(s)${onlyStorage(r) ? ', all in how the same bytes are stored' : ''}.`);
  }
  if (r.ignored.length > 0) out.push('', `Ignored: ${r.ignored.map((x) => `\`${x}\``).join(', ')}.`);
  return `${out.join('\n')}\n`;
}
