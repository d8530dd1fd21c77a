import type { Metadata, TensorInfo } from '../schema/model.js';

/**
 * The JSON manifest of `popef pack` / `popef unpack`: the blobs of one file,
 * in order, with payloads in separate files. Its JSON Schema is
 * schemas/manifest.schema.json; these types mirror it.
 */

export const MANIFEST_FORMAT = 'popef-open-manifest';
/** The manifest version pack writes and unpack reads. */
export const MANIFEST_VERSION = 1;

/** One blob of a manifest, by type, with the file that holds its payload (schemas/manifest.schema.json). */
export type ManifestBlob =
  | { readonly type: 'POPLAR_EXECUTABLE'; readonly name: string; readonly file: string; readonly compress?: boolean }
  | { readonly type: 'METADATA'; readonly metadata: Metadata }
  | { readonly type: 'DATA_TENSOR'; readonly name: string; readonly tensorInfo: TensorInfo; readonly file: string }
  | { readonly type: 'DATA_FEED'; readonly name: string; readonly tensorInfo: TensorInfo; readonly sampleCount: number; readonly file: string }
  | { readonly type: 'OPAQUE'; readonly name: string; readonly executable: string; readonly file: string }
  | {
      readonly type: 'RAW';
      readonly typeCode: number;
      readonly version: string;
      readonly codec: number;
      readonly descriptorFile: string;
      readonly file: string;
    }
  | { readonly type: 'END_OF_SEGMENT' };

/** A PopEF file described as JSON: every blob in order, payloads in files beside it (what pack reads and unpack writes). */
export interface Manifest {
  readonly format: typeof MANIFEST_FORMAT;
  readonly version: typeof MANIFEST_VERSION;
  readonly blobs: readonly ManifestBlob[];
}
