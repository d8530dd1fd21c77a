import { readByLine } from './read-by.js';
import type { Colour } from './colour.js';
import { humanBytes } from './human-bytes.js';
import type { AnchorRole } from '../inspect/anchor-roles.js';
import type { AnchorReport, DumpReport, MetadataReport, ModelReport } from '../inspect/report.js';

/** Which sections the text view shows. */
export interface TextSections {
  readonly metadata: 'none' | 'summary' | 'full';
  readonly anchors: 'none' | 'user' | 'all';
  readonly blobs: boolean;
  /** Tensor data, feed data, opaque blobs and warnings (part of --all). */
  readonly data: boolean;
}

const ROLE_HEADINGS: readonly [AnchorRole, string][] = [
  ['user-input', 'Inputs (User-provided)'],
  ['user-output', 'Outputs (User-provided)'],
  ['stored', 'Stored in file (tensor data)'],
  ['seed', 'Random seed'],
  ['load-save', 'Load/save streams (not in the main program)'],
  ['unknown', 'Unknown (no stream, no data)'],
];

const bool = (b: boolean): string => (b ? 'True' : 'False');
const list = (xs: readonly (number | string)[]): string => `[${xs.join(', ')}]`;

/** The TensorInfo line exactly as popef_dump prints it. */
export function tensorInfoLine(dtype: string, size: number | string, shape: readonly number[]): string {
  return `{ dtype: ${dtype}, sizeInBytes: ${size}, shape ${list(shape)} }`;
}

function anchorLines(a: AnchorReport, c: Colour): string[] {
  return [
    `    Name: ${c.cyan(JSON.stringify(a.name))}:`,
    `      TensorInfo: ${tensorInfoLine(a.dtype, a.sizeInBytes, a.shape)}`,
    `      Programs: ${list(a.programs)}`,
    `      Handle: ${a.handle}`,
    `      IsPerReplica: ${bool(a.isPerReplica)}`,
  ];
}

function metadataLines(m: MetadataReport, model: ModelReport, full: boolean, c: Colour): string[] {
  const out = [
    c.bold('Metadata:'),
    `  Executable: ${JSON.stringify(m.executable)}`,
    `  ReplicationFactor: ${m.replicationFactor}`,
    `  NumIpus: ${m.numIpus}`,
    `  IpuVersion: ${m.ipuVersion}`,
  ];
  if (full) out.push(`  IsPOD: ${bool(m.isPOD)}`, `  NumProcesses: ${m.numProcesses}`);
  out.push(`  IsInference: ${bool(m.isInference)}`, `  DeviceIterations: ${m.deviceIterations}`);
  const names = new Map(m.programsMap.map((p) => [p.index, p.name]));
  const named = (xs: readonly number[]): string => {
    const labels = xs.map((x) => names.get(x)).filter((n): n is string => n !== undefined);
    return labels.length === xs.length && xs.length > 0 ? `${list(xs)} (${labels.join(', ')})` : list(xs);
  };
  if (!full) {
    out.push(`  ProgramFlow: { load: ${list(m.programFlow.load)}, main: ${list(m.programFlow.main)}, save: ${list(m.programFlow.save)} }`);
    return out;
  }
  out.push(
    `  SeedHandle: ${JSON.stringify(m.seedHandle)}`,
    `  Executable blob: ${model.executableSize} bytes${model.compressed ? ' (compressed)' : ''}`,
    '  ProgramFlow:',
    `    Load: ${named(m.programFlow.load)}`,
    `    Main: ${named(m.programFlow.main)}`,
    `    Save: ${named(m.programFlow.save)}`,
  );
  out.push(`  ProgramsMap:${m.programsMap.length === 0 ? ' (none)' : ''}`);
  for (const p of m.programsMap) out.push(`    ${p.index}: ${p.name}`);
  for (const [label, options] of [
    ['EngineOptions', m.engineOptions],
    ['DeviceOptions', m.deviceOptions],
  ] as const) {
    out.push(`  ${label}:${options.length === 0 ? ' (none)' : ''}`);
    for (const o of options) out.push(`    ${o.name}: ${o.value}`);
  }
  return out;
}

function anchorsSection(m: MetadataReport, mode: 'user' | 'all', c: Colour): string[] {
  const out = [c.bold('Anchors:')];
  for (const [role, heading] of ROLE_HEADINGS) {
    const anchors = m.anchors.filter((a) => a.role === role);
    const userRole = role === 'user-input' || role === 'user-output';
    if (!userRole && (mode === 'user' || anchors.length === 0)) continue;
    out.push(`  ${heading}:${anchors.length === 0 ? ' (none)' : ''}`);
    for (const a of anchors) out.push(...anchorLines(a, c));
  }
  return out;
}

/**
 * Renders the popef_dump-style text report. The blob table comes rendered
 * (`blobs`), so that views without it never load the table library.
 */
export function renderDumpText(report: DumpReport, sections: TextSections, c: Colour, blobs = ''): string {
  const out: string[] = [];
  for (const f of report.files) {
    out.push(`PopEF file: ${f.path}`);
    // Not in the anchors-only view: that one stays popef_dump's report, line for line.
    if (f.readBy !== undefined && (sections.metadata !== 'none' || sections.blobs)) out.push(`  ${readByLine(f.readBy)}`);
  }
  const several = report.models.length > 1;
  if (sections.metadata !== 'none' || sections.anchors !== 'none') {
    if (report.models.length === 0) out.push('Models: (none: no executable in these files)');
    for (const model of report.models) {
      if (several) out.push(c.bold(`Executable: ${JSON.stringify(model.executable)}`));
      const m = model.metadata;
      if (m === null) {
        out.push('Metadata: (none: this executable has no metadata blob)');
        continue;
      }
      // Appended line by line: a spread of a million-anchor section would exceed the call stack.
      if (sections.metadata !== 'none') for (const line of metadataLines(m, model, sections.metadata === 'full', c)) out.push(line);
      if (sections.anchors !== 'none') for (const line of anchorsSection(m, sections.anchors, c)) out.push(line);
      // The opaque blobs are listed once, in the data section below, with their executable.
    }
  }
  if (sections.data) {
    if (report.tensors.length > 0) {
      out.push(c.bold('Tensor data:'));
      for (const t of report.tensors) out.push(`  Name: ${c.cyan(JSON.stringify(t.name))}: ${tensorInfoLine(t.dtype, t.sizeInBytes, t.shape)}`);
    }
    if (report.feeds.length > 0) {
      out.push(c.bold('Feed data:'));
      for (const f of report.feeds) {
        out.push(`  Name: ${c.cyan(JSON.stringify(f.name))}: ${f.sampleCount} sample(s) of ${tensorInfoLine(f.dtype, f.sizeInBytes, f.shape)}`);
      }
    }
    if (report.opaques.length > 0) {
      out.push(c.bold('Opaque blobs:'));
      for (const o of report.opaques)
        out.push(`  Name: ${c.cyan(JSON.stringify(o.name))}: executable ${JSON.stringify(o.executable)}, ${humanBytes(o.size)}`);
    }
  }
  if (sections.blobs) {
    out.push(c.bold('Blobs:'));
    out.push(blobs);
  }
  if (sections.data && report.warnings.length > 0) {
    out.push(c.bold('Warnings:'));
    for (const w of report.warnings) out.push(`  ${w.file}: offset ${w.offset}: ${w.message}`);
  }
  if (report.verify !== null) {
    const v = report.verify;
    out.push(
      v.ok
        ? `Verified: ${v.blobs} blob(s), ${humanBytes(v.bytes)} of payload: ${c.green('all checksums match')}`
        : c.red(
            `Damage found in ${v.damaged} of ${v.blobs} blob(s) (the errors above name each); ${humanBytes(v.bytes)} of payload in the others checked intact`,
          ),
    );
  }
  return `${out.join('\n')}\n`;
}
