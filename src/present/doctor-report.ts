import Table from 'cli-table3';
import type { DoctorReport } from '../run/sdk-doctor.js';
import type { Colour } from './colour.js';

/** `popef doctor` as text: the interpreter, the imports, the SDK calls (missing ones first), the devices, the verdict. */
export function renderDoctorText(report: DoctorReport, c: Colour): string {
  const yes = (ok: boolean, text = ok ? 'yes' : 'no'): string => (ok ? c.green(text) : c.red(text));
  const out: string[] = [];
  const p = report.python;
  out.push(
    `Python: ${p.found ? `${p.executable ?? p.command} (${p.version ?? 'version unknown'})` : c.red(`not usable (${p.command}): ${p.error ?? ''}`)}`,
  );
  for (const [name, s] of Object.entries(report.imports))
    out.push(
      `import ${name}: ${s.ok ? `${yes(true)}${s.file !== undefined && s.file !== '' ? ` (${s.file})` : ''}` : `${yes(false)}: ${s.error ?? ''}`}`,
    );
  const sdkImports = report.imports.popef.ok && report.imports.model_runtime.ok;
  // Only modules that import can say their release; when none does, that is the reason it is unknown.
  const anyImports = report.imports.popef.ok || report.imports.model_runtime.ok;
  out.push(
    `Poplar SDK release: ${report.sdkVersion ?? (anyImports ? 'unknown (the modules carry no __version__)' : 'unknown (the SDK modules do not import)')}`,
  );
  if (!sdkImports) out.push('SDK calls: not checked (the SDK modules do not import)');
  else if (report.calls.length > 0) {
    const compact = { mid: '', 'left-mid': '', 'mid-mid': '', 'right-mid': '' };
    const table = new Table({ head: ['SDK call', 'need', 'used by', 'present'], style: { head: [], border: [] }, chars: compact });
    const ordered = [...report.calls].sort((a, b) => Number(a.present) - Number(b.present));
    const absent = (call: (typeof ordered)[number]): string => {
      if (call.need === 'inferred') return c.yellow(call.fallback ? 'no: unverified (fallback)' : 'no: unverified');
      return call.fallback ? c.yellow('no (fallback)') : yes(false);
    };
    for (const call of ordered) table.push([`${call.module}.${call.call}`, call.need, call.uses.join(', '), call.present ? yes(true) : absent(call)]);
    out.push(table.toString());
    const present = report.calls.filter((x) => x.present).length;
    out.push(`${present} of ${report.calls.length} calls present (see src/run/bridge/SDK-API.md for what each is and the evidence for it)`);
    if (report.unverified.length > 0) {
      out.push(
        c.yellow(
          `Unverified: ${report.unverified.length} call(s) whose Python spelling is inferred from the C++ API are absent; this SDK may spell them otherwise: ${report.unverified.join(', ')}`,
        ),
      );
    }
  }
  for (const o of report.operations) {
    const what = o.operation === 'read' ? 'dump/read' : o.operation;
    const state = o.anyModel.ok
      ? c.green('can proceed')
      : o.withoutFeeds.ok
        ? `${c.green('can proceed')} for models without feed blobs; ${c.yellow(`not for others (${o.anyModel.absent.join(', ')})`)}`
        : c.red(`cannot proceed (${o.withoutFeeds.absent.join(', ')})`);
    out.push(`${what}: ${state}`);
  }
  const d = report.devices;
  out.push(
    d.found
      ? `IPUs (gc-info -l):${d.lines.length === 0 ? ' none listed' : `\n  ${d.lines.join('\n  ')}`}${d.error !== undefined ? `\n  ${c.yellow(d.error)}` : ''}`
      : `IPUs: not listed: ${d.error ?? ''}`,
  );
  if (report.problems.length === 0)
    out.push(
      c.green(
        report.operations.every((o) => o.anyModel.ok)
          ? 'The IPU bridge has everything it needs here.'
          : 'The IPU bridge can read files and run models without feeds here.',
      ),
    );
  else {
    out.push(c.red(`The IPU bridge cannot work here (${report.problems.length} problem(s)):`));
    for (const problem of report.problems) out.push(`  - ${problem}`);
    out.push(
      'Enable the Poplar SDK in this shell (source <sdk>/enable), or set POPEF_PYTHON to its interpreter; send this output (popef doctor --json) with a bug report.',
    );
  }
  return `${out.join('\n')}\n`;
}
