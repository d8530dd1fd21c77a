import { ErrorCode, PopefError } from '../errors.js';
import type { ModelSet } from '../format/model-set.js';
import type { VerifyReport } from './report.js';

export interface VerifyOutcome {
  readonly report: VerifyReport;
  /** One error per damaged blob, in file order. */
  readonly errors: readonly PopefError[];
}

/**
 * Reads every payload of every blob and checks checksums, padding and
 * compressed lengths. Damage in one blob does not stop the others from
 * being checked, so the user sees every damaged blob at once.
 */
export async function verifyModelSet(
  set: ModelSet,
  onProgress?: (done: number, total: number) => void,
  signal?: AbortSignal,
): Promise<VerifyOutcome> {
  const total = set.blobs.reduce((sum, b) => sum + b.payloadLength, 0);
  let before = 0;
  let bytes = 0;
  const errors: PopefError[] = [];
  for (const blob of set.blobs) {
    try {
      await set.fileOf(blob).verifyBlob(blob, (done) => {
        // Between chunks: Ctrl-C stops a verify of many gigabytes at once.
        if (signal?.aborted === true) throw new PopefError(ErrorCode.Io, 'interrupted; the verification was stopped', {});
        onProgress?.(before + done, total);
      });
      bytes += blob.payloadLength;
    } catch (error) {
      if (!(error instanceof PopefError) || signal?.aborted === true) throw error;
      errors.push(error);
    }
    before += blob.payloadLength;
  }
  onProgress?.(total, total);
  return { report: { blobs: set.blobs.length, bytes, damaged: errors.length, ok: errors.length === 0 }, errors };
}
