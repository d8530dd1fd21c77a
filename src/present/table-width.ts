/**
 * Column widths that make a cli-table3 table fit `width` terminal columns:
 * the widest columns give way first, and their cells wrap (wordWrap) rather
 * than the table's lines wrapping in the terminal, which breaks every border.
 * Undefined (no limit: not a terminal, or a table that fits) leaves
 * cli-table3 to size the columns by their content.
 */
export function fitColumns(rows: readonly (readonly string[])[], width: number | undefined, minimum = 6): number[] | undefined {
  if (width === undefined || rows.length === 0) return undefined;
  const columns = Math.max(...rows.map((r) => r.length));
  // Each cell is padded by one space on either side; the table has columns + 1 borders.
  const natural = Array.from({ length: columns }, (_, i) => Math.max(...rows.map((r) => visibleWidth(r[i] ?? ''))) + 2);
  const budget = width - (columns + 1);
  let total = natural.reduce((a, b) => a + b, 0);
  if (total <= budget) return undefined;
  const widths = [...natural];
  while (total > budget) {
    let widest = 0;
    for (let i = 1; i < columns; i++) if ((widths[i] ?? 0) > (widths[widest] ?? 0)) widest = i;
    if ((widths[widest] ?? 0) <= minimum) break; // too narrow a terminal: the smallest readable table
    widths[widest] = (widths[widest] ?? 0) - 1;
    total -= 1;
  }
  return widths;
}

/** The columns a string takes on a terminal: colour codes take none; lines count by the longest. */
function visibleWidth(text: string): number {
  // eslint-disable-next-line no-control-regex
  const plain = text.replace(/\x1b\[[0-9;]*m/g, '');
  return Math.max(...plain.split('\n').map((line) => Array.from(line).length));
}

/** cli-table3 options for a table of `rows` (head included) that fits `width`. */
export function widthOptions(
  rows: readonly (readonly string[])[],
  width: number | undefined,
): { colWidths?: number[]; wordWrap?: boolean; wrapOnWordBoundary?: boolean } {
  const colWidths = fitColumns(rows, width);
  return colWidths === undefined ? {} : { colWidths, wordWrap: true, wrapOnWordBoundary: false };
}
