import type { Colour } from './colour.js';
import Table from 'cli-table3';
import type { RunReport } from '../run/run-report.js';
import { widthOptions } from './table-width.js';

function num(x: number): string {
  if (!Number.isFinite(x)) return String(x);
  if (Number.isInteger(x) && Math.abs(x) < 1e12) return String(x);
  const a = Math.abs(x);
  return a !== 0 && (a < 1e-3 || a >= 1e6) ? x.toExponential(4) : x.toPrecision(6).replace(/\.?0+$/, '');
}

const ms = (x: number): string => `${x < 10 ? x.toFixed(3) : x.toFixed(1)} ms`;

export function renderRunText(r: RunReport, c: Colour, width?: number): string {
  const out: string[] = [];
  out.push(`${c.bold('Model:')} ${r.model} (executable "${r.executable}"), plugin ${r.plugin}`);
  const head = ['Output', 'dtype', 'shape', 'min', 'max', 'mean', 'first values'];
  const rows = r.outputs.map((o) => [o.name, o.dtype, `[${o.shape.join(', ')}]`, num(o.min), num(o.max), num(o.mean), o.first.map(num).join(', ')]);
  const table = new Table({ ...widthOptions([head, ...rows], width), head: head.map((h) => c.bold(h)), style: { head: [], border: [] } });
  for (const row of rows) table.push(row);
  out.push(table.toString());
  for (const o of r.outputs) {
    if (o.topK === undefined) continue;
    o.topK.forEach((row, i) => {
      const label = o.topK !== undefined && o.topK.length > 1 ? `${o.name}[${i}]` : o.name;
      out.push(`Top ${row.length} of ${label}: ${row.map((e) => `${e.index} (${num(e.value)})`).join(', ')}`);
    });
  }
  const t = r.timing;
  out.push(
    `${c.bold('Latency')} over ${t.runs} run(s)${t.warmup > 0 ? ` after ${t.warmup} warm-up` : ''}: min ${ms(t.min)}, p50 ${ms(t.p50)}, p90 ${ms(t.p90)}, p99 ${ms(t.p99)}, max ${ms(t.max)}`,
    `${c.bold('Throughput')}: ${num(t.samplesPerSecond)} samples/s (batch ${t.batch})`,
  );
  if (r.comparison !== null) {
    out.push(c.bold(r.comparedWith === undefined ? 'Comparison with the expected outputs:' : `Comparison with plugin ${r.comparedWith}:`));
    const compareHead = ['Output', 'result', 'mismatches', 'max abs err', 'max rel err', 'atol', 'rtol', 'passing atol', 'passing rtol'];
    const compareRows = r.comparison.map((x) => [
      x.name,
      x.passed ? c.green('pass') : c.red('FAIL'),
      `${x.mismatches}/${x.elements}`,
      num(x.maxAbsError),
      num(x.maxRelError),
      num(x.atol),
      num(x.rtol),
      num(x.minAtol),
      num(x.minRtol),
    ]);
    const ct = new Table({
      ...widthOptions([compareHead, ...compareRows], width),
      head: compareHead.map((h) => c.bold(h)),
      style: { head: [], border: [] },
    });
    for (const row of compareRows) ct.push(row);
    out.push(ct.toString());
    for (const x of r.comparison) if (x.note !== undefined) out.push(c.red(`${x.name}: ${x.note}`));
    const failed = r.comparison.filter((x) => !x.passed).length;
    out.push(failed === 0 ? c.green('All outputs match.') : c.red(`${failed} output(s) differ beyond the tolerances.`));
  }
  return `${out.join('\n')}\n`;
}
