import type { FileReport } from '../inspect/report.js';

/** Which reader read a file that is not in the open layout (text and Markdown). */
export function readByLine(r: NonNullable<FileReport['readBy']>): string {
  return `Read with: the Poplar SDK's popef.Reader (${r.sdkVersion === null ? 'release unknown' : `release ${r.sdkVersion}`}), through the IPU bridge; offsets and sizes are those of its open-layout copy`;
}
