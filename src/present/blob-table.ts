import type { Colour } from './colour.js';
import Table from 'cli-table3';
import type { DumpReport } from '../inspect/report.js';
import { typeLabel } from './blob-labels.js';
import { humanBytes } from './human-bytes.js';
import { widthOptions } from './table-width.js';

/** The blob inventory as a cli-table3 table (a File column only when there are several files). */
export function blobTable(report: DumpReport, c: Colour, width?: number): string {
  const several = report.files.length > 1;
  const head = [...(several ? ['File'] : []), '#', 'Type', 'Name', 'Offset', 'Size', 'Payload', 'Compression', 'CRC-32'];
  const rows = report.blobs.map((b) => {
    const name = b.name === null ? '' : b.executable === null ? b.name : `${b.name} -> ${b.executable}`;
    // Sizes for people (the exact bytes are in --json); offsets stay exact, they are addresses.
    const compression =
      b.compression === 'none' ? 'none' : `${b.compression} (${b.uncompressedSize === null ? '?' : humanBytes(b.uncompressedSize)} inflated)`;
    return [
      ...(several ? [b.file] : []),
      String(b.index),
      typeLabel(b),
      name,
      String(b.offset),
      humanBytes(b.totalSize),
      humanBytes(b.payloadLength),
      compression,
      b.crc32,
    ];
  });
  const table = new Table({
    ...widthOptions([head, ...rows], width),
    head: head.map((h) => c.bold(h)),
    style: { head: [], border: [] },
    // No rule between body rows: an inventory reads as a list.
    chars: { mid: '', 'left-mid': '', 'mid-mid': '', 'right-mid': '' },
  });
  for (const row of rows) table.push(row);
  return table.toString();
}
