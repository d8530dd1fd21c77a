import type { Colour } from './colour.js';
import Table from 'cli-table3';
import type { DumpReport } from '../inspect/report.js';
import { typeLabel } from './blob-labels.js';

/** The blob inventory as a cli-table3 table (a File column only when there are several files). */
export function blobTable(report: DumpReport, c: Colour): string {
  const several = report.files.length > 1;
  const head = [...(several ? ['File'] : []), '#', 'Type', 'Name', 'Offset', 'Size', 'Payload', 'Compression', 'CRC-32'];
  const table = new Table({
    head: head.map((h) => c.bold(h)),
    style: { head: [], border: [] },
    // No rule between body rows: an inventory reads as a list.
    chars: { mid: '', 'left-mid': '', 'mid-mid': '', 'right-mid': '' },
  });
  for (const b of report.blobs) {
    const name = b.name === null ? '' : b.executable === null ? b.name : `${b.name} -> ${b.executable}`;
    const compression = b.compression === 'none' ? 'none' : `${b.compression} (${b.uncompressedSize ?? '?'} bytes inflated)`;
    table.push([...(several ? [b.file] : []), String(b.index), typeLabel(b), name, String(b.offset), String(b.totalSize), String(b.payloadLength), compression, b.crc32]);
  }
  return table.toString();
}
