import type { DiffReport } from '../inspect/diff.js';
import type { DumpReport, MetadataReport } from '../inspect/report.js';
import { NO_COLOUR } from '../present/colour.js';
import { renderDiffText } from '../present/diff-report.js';
import { renderDumpText } from '../present/dump-text.js';
import { humanBytes } from '../present/human-bytes.js';
import { esc, table } from '../present/html.js';

/**
 * The page's views of a dump report. The first is `popef dump`'s own text,
 * rendered by the CLI's presenter, so the seed's report reads the same in
 * the page as in a terminal; the others are tables of what `dump --all`
 * prints.
 */

export function summaryHtml(report: DumpReport): string {
  const text = renderDumpText(report, { metadata: 'summary', anchors: 'user', blobs: false, data: false }, NO_COLOUR);
  return `<pre class="report" aria-label="popef dump report">${esc(text)}</pre>`;
}

const ROLES = [
  ['user-input', 'Inputs (user-provided)'],
  ['user-output', 'Outputs (user-provided)'],
  ['stored', 'Stored in file (tensor data)'],
  ['seed', 'Random seed'],
  ['load-save', 'Load/save streams'],
  ['unknown', 'Unknown (no stream, no data)'],
] as const;

export function anchorsHtml(report: DumpReport): string {
  return report.models
    .map((model) => {
      const anchors = model.metadata?.anchors ?? [];
      const groups = ROLES.map(([role, title]) => {
        const rows = anchors.filter((a) => a.role === role);
        if (rows.length === 0) return '';
        return table(
          `${model.executable}: ${title}`,
          ['name', 'handle', 'type', 'dtype', 'shape', 'size', 'per replica', 'programs'],
          rows.map((a) => [
            a.name,
            a.handle,
            a.type,
            a.dtype,
            `[${a.shape.join(', ')}]`,
            humanBytes(a.sizeInBytes),
            a.isPerReplica ? 'yes' : 'no',
            `[${a.programs.join(', ')}]`,
          ]),
        );
      });
      return groups.join('') || `<p>Executable ${esc(model.executable)} has no metadata, so no anchors.</p>`;
    })
    .join('');
}

function metadataRows(m: MetadataReport): [string, string][] {
  const rows: [string, string][] = [];
  for (const [key, value] of Object.entries(m)) {
    if (key === 'anchors') continue;
    rows.push([key, typeof value === 'object' ? JSON.stringify(value) : String(value)]);
  }
  return rows;
}

export function metadataHtml(report: DumpReport): string {
  return report.models
    .map((model) =>
      model.metadata === null
        ? `<p>Executable ${esc(model.executable)} has no metadata blob.</p>`
        : table(`${model.executable}: metadata`, ['field', 'value'], metadataRows(model.metadata)),
    )
    .join('');
}

export function blobsHtml(report: DumpReport): string {
  return table(
    'Blobs',
    ['file', '#', 'type', 'name', 'executable', 'offset', 'size', 'compression', 'crc32'],
    report.blobs.map((b) => [
      b.file,
      b.index,
      b.type,
      b.name ?? '',
      b.executable ?? '',
      b.offset,
      { html: `<span title="${esc(b.payloadLength)} bytes">${esc(humanBytes(b.payloadLength))}</span>` },
      b.compression + (b.uncompressedSize === null ? '' : ` (${humanBytes(b.uncompressedSize)} inflated)`),
      b.crc32,
    ]),
  );
}

export function diffHtml(report: DiffReport): string {
  return `<pre class="report" aria-label="popef diff report">${esc(renderDiffText(report, NO_COLOUR))}</pre>`;
}
