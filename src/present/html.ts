/**
 * HTML as strings, escaped at one place. Every text that comes from a file
 * (anchor names, executable names, messages quoting them) passes through
 * `esc` before it reaches the page, so a name cannot add markup or script.
 */

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function esc(text: string | number | boolean): string {
  return String(text).replace(/[&<>"']/g, (c) => ENTITIES[c] ?? c);
}

/** A table with a caption, header cells and escaped body cells (a cell given as {html} is taken as markup). */
export function table(caption: string, head: readonly string[], rows: readonly (readonly (string | number | { html: string })[])[]): string {
  const cell = (v: string | number | { html: string }): string => (typeof v === 'object' ? v.html : esc(v));
  return [
    '<table>',
    `<caption>${esc(caption)}</caption>`,
    `<thead><tr>${head.map((h) => `<th scope="col">${esc(h)}</th>`).join('')}</tr></thead>`,
    `<tbody>${rows.map((r) => `<tr>${r.map((v) => `<td>${cell(v)}</td>`).join('')}</tr>`).join('')}</tbody>`,
    '</table>',
  ].join('');
}
