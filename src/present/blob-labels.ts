import type { BlobReport } from '../inspect/report.js';

/** The blob type for humans: unknown types show their code. */
export function typeLabel(b: BlobReport): string {
  return b.type === 'UNKNOWN' ? `UNKNOWN (type ${b.typeCode})` : b.type;
}
