import type { AnchorReport, DumpReport } from '../inspect/report.js';
import { readByLine } from './read-by.js';
import { typeLabel } from './blob-labels.js';

/** Escapes text for a Markdown table cell. */
function cell(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

function code(text: string): string {
  return text === '' ? '' : `\`${cell(text).replace(/`/g, "'")}\``;
}

function anchorTable(anchors: readonly AnchorReport[]): string[] {
  if (anchors.length === 0) return ['_none_', ''];
  return [
    '| Name | Handle | dtype | Shape | Bytes | Per replica |',
    '|---|---|---|---|---:|---|',
    ...anchors.map(
      (a) => `| ${code(a.name)} | ${code(a.handle)} | ${a.dtype} | [${a.shape.join(', ')}] | ${a.sizeInBytes} | ${a.isPerReplica ? 'yes' : 'no'} |`,
    ),
    '',
  ];
}

/** A model card for a pull-request comment: model, target runtime, I/O and blobs. */
export function renderDumpMarkdown(report: DumpReport): string {
  const out: string[] = [];
  const files = report.files.map((f) => code(f.path)).join(', ');
  out.push(`## PopEF: ${files}`, '');
  for (const f of report.files) if (f.readBy !== undefined) out.push(`${code(f.path)}: ${readByLine(f.readBy)}.`, '');
  for (const model of report.models) {
    out.push(`### Model ${code(model.executable)}`, '');
    const m = model.metadata;
    out.push('| | |', '|---|---|');
    out.push(
      `| Executable | ${code(model.executable)}, ${model.executableSize} bytes${model.compressed ? ', compressed' : ''} (${code(model.file)}) |`,
    );
    if (m !== null) {
      out.push(
        `| Target runtime | IPU version ${m.ipuVersion}, ${m.numIpus} IPU(s), replication factor ${m.replicationFactor}${m.isPOD ? ', POD' : ''}, ${m.numProcesses} process(es) |`,
      );
      out.push(`| Mode | ${m.isInference ? 'inference' : 'training'}, ${m.deviceIterations} device iteration(s) |`);
      out.push(
        `| Program flow | load [${m.programFlow.load.join(', ')}], main [${m.programFlow.main.join(', ')}], save [${m.programFlow.save.join(', ')}] |`,
      );
    }
    if (model.opaques.length > 0) out.push(`| Opaque blobs | ${model.opaques.map(code).join(', ')} |`);
    if (model.tensors.length > 0) out.push(`| Stored tensors | ${model.tensors.length} |`);
    out.push('');
    if (m === null) {
      out.push('_No metadata blob for this executable._', '');
      continue;
    }
    out.push('#### Inputs', '', ...anchorTable(m.anchors.filter((a) => a.role === 'user-input')));
    out.push('#### Outputs', '', ...anchorTable(m.anchors.filter((a) => a.role === 'user-output')));
  }
  out.push('### Blobs', '');
  out.push('| # | Type | Name | Size | Compression | CRC-32 |', '|---:|---|---|---:|---|---|');
  for (const b of report.blobs) {
    const file = report.files.length > 1 ? `${code(b.file)} ` : '';
    out.push(
      `| ${file}${b.index} | ${typeLabel(b)} | ${b.name === null ? '' : code(b.name)} | ${b.totalSize} | ${b.compression} | ${code(b.crc32)} |`,
    );
  }
  if (report.warnings.length > 0) {
    out.push('', '### Warnings', '');
    for (const w of report.warnings) out.push(`- ${code(w.file)} offset ${w.offset}: ${cell(w.message)}`);
  }
  if (report.verify !== null) {
    const v = report.verify;
    out.push('', v.ok ? `Verified: ${v.blobs} blob(s), all checksums match.` : `Damage found in ${v.damaged} of ${v.blobs} blob(s).`);
  }
  return `${out.join('\n')}\n`;
}
