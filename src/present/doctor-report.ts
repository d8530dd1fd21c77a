import Table from 'cli-table3';
import type { DoctorReport } from '../run/sdk-doctor.js';
import type { Colour } from './colour.js';

/** `popef doctor` as text: the interpreter, the imports, the SDK calls (missing ones first), the devices, the verdict. */
export function renderDoctorText(report: DoctorReport, c: Colour): string {
  const yes = (ok: boolean, text = ok ? 'yes' : 'no'): string => (ok ? c.green(text) : c.red(text));
  const out: string[] = [];
  const p = report.python;
  out.push(`Python: ${p.found ? `${p.executable ?? p.command} (${p.version ?? 'version unknown'})` : c.red(`not usable (${p.command}): ${p.error ?? ''}`)}`);
  for (const [name, s] of Object.entries(report.imports)) out.push(`import ${name}: ${s.ok ? `${yes(true)}${s.file !== undefined && s.file !== '' ? ` (${s.file})` : ''}` : `${yes(false)}: ${s.error ?? ''}`}`);
  out.push(`Poplar SDK release: ${report.sdkVersion ?? 'unknown (the modules carry no __version__)'}`);
  const sdkImports = report.imports.popef.ok && report.imports.model_runtime.ok;
  if (!sdkImports) out.push('SDK calls: not checked (the SDK modules do not import)');
  else if (report.calls.length > 0) {
    const compact = { mid: '', 'left-mid': '', 'mid-mid': '', 'right-mid': '' };
    const table = new Table({ head: ['SDK call', 'need', 'present'], style: { head: [], border: [] }, chars: compact });
    const ordered = [...report.calls].sort((a, b) => Number(a.present) - Number(b.present));
    for (const call of ordered) table.push([`${call.module}.${call.call}`, call.need, yes(call.present)]);
    out.push(table.toString());
    const present = report.calls.filter((x) => x.present).length;
    out.push(`${present} of ${report.calls.length} calls present (see src/run/bridge/SDK-API.md for what each is and the evidence for it)`);
  }
  const d = report.devices;
  out.push(d.found ? `IPUs (gc-info -l):${d.lines.length === 0 ? ' none listed' : `\n  ${d.lines.join('\n  ')}`}${d.error !== undefined ? `\n  ${c.yellow(d.error)}` : ''}` : `IPUs: not listed: ${d.error ?? ''}`);
  if (report.problems.length === 0) out.push(c.green('The IPU bridge has everything it needs here.'));
  else {
    out.push(c.red(`The IPU bridge cannot work here (${report.problems.length} problem(s)):`));
    for (const problem of report.problems) out.push(`  - ${problem}`);
    out.push('Enable the Poplar SDK in this shell (source <sdk>/enable), or set POPEF_PYTHON to its interpreter; send this output (popef doctor --json) with a bug report.');
  }
  return `${out.join('\n')}\n`;
}
