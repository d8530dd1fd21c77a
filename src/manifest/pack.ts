import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { ErrorCode, PopefError, ioError } from '../errors.js';
import { FILE_LIMITS, readRegularFile, readRegularText, resolveInside } from '../io/local-file.js';
import { checkModelContents } from '../format/model-rules.js';
import { PopefWriter, type WriterOptions } from '../format/writer.js';
import { schemaErrors } from '../json-schemas.js';
import type { Manifest, ManifestBlob } from './manifest.js';

/** Reads manifest.json and checks it against its JSON Schema. */
export async function readManifest(path: string): Promise<Manifest> {
  const text = await readRegularText(path, { what: 'the manifest', limit: FILE_LIMITS.json });
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new PopefError(ErrorCode.Manifest, `manifest is not valid JSON: ${(error as Error).message}`, {
      file: path,
      suggestion: 'fix the JSON syntax',
    });
  }
  const errors = schemaErrors('manifest', value);
  if (errors.length > 0) {
    throw new PopefError(ErrorCode.Manifest, `manifest does not match its schema:\n  ${errors.join('\n  ')}`, {
      file: path,
      suggestion: 'see schemas/manifest.schema.json',
    });
  }
  return value as Manifest;
}

/** Model-level checks on a manifest, so that pack never writes an inconsistent file. */
export function checkManifestModel(manifest: Manifest, path: string): void {
  const at = (i: number): { file: string; offset: undefined } => ({ file: `${path}#/blobs/${i}`, offset: undefined });
  const pick = <T extends ManifestBlob['type']>(type: T): { blob: Extract<ManifestBlob, { type: T }>; i: number }[] =>
    manifest.blobs.flatMap((blob, i) => (blob.type === type ? [{ blob: blob as Extract<ManifestBlob, { type: T }>, i }] : []));
  checkModelContents({
    executables: pick('POPLAR_EXECUTABLE').map(({ blob, i }) => ({ name: blob.name, where: at(i) })),
    metadata: pick('METADATA').map(({ blob, i }) => ({ metadata: blob.metadata, where: at(i) })),
    tensors: pick('DATA_TENSOR').map(({ blob, i }) => ({ name: blob.name, tensorInfo: blob.tensorInfo, where: at(i) })),
    feeds: pick('DATA_FEED').map(({ blob, i }) => ({ name: blob.name, where: at(i) })),
    opaques: pick('OPAQUE').map(({ blob, i }) => ({ name: blob.name, executable: blob.executable, where: at(i) })),
  });
}

/** How packFile writes the PopEF file. */
export interface PackOptions extends Pick<WriterOptions, 'force' | 'compressionLevel' | 'signal'> {
  /** Called after each blob with its position and type. */
  readonly onBlob?: (index: number, blob: ManifestBlob) => void;
}

/** Payload files are streamed in chunks of this size: big enough to keep up with cp, small enough for memory. */
const READ_CHUNK = 4 * 1024 * 1024;

/**
 * Writes the file a manifest describes. Everything is checked before the
 * first byte is written (schema, model consistency, payload files present);
 * payloads are streamed from disk. The output appears atomically at the end.
 */
export async function packManifest(manifestPath: string, outPath: string, options: PackOptions = {}): Promise<void> {
  const manifest = await readManifest(manifestPath);
  checkManifestModel(manifest, manifestPath);
  const base = dirname(manifestPath);
  // Every payload is resolved, confined to the manifest's directory and checked to be a regular file before the first byte is written.
  const resolved = new Map<string, string>();
  for (const [i, blob] of manifest.blobs.entries()) {
    for (const file of 'file' in blob ? [blob.file, ...('descriptorFile' in blob ? [blob.descriptorFile] : [])] : []) {
      const where = `${manifestPath}#/blobs/${i}`;
      const path = await resolveInside(base, file, where, 'payload file');
      const info = await stat(path).catch((error: unknown) => {
        throw ioError(error, where, `read payload file ${JSON.stringify(file)}`);
      });
      if (!info.isFile()) throw new PopefError(ErrorCode.Manifest, `payload ${JSON.stringify(file)} is not a regular file`, { file: where });
      resolved.set(file, path);
    }
  }
  await refuseOwnInput(outPath, manifestPath, resolved);
  const payloadPath = (file: string): string => resolved.get(file) ?? resolve(base, file);
  const stream = (file: string): AsyncIterable<Uint8Array> => createReadStream(payloadPath(file), { highWaterMark: READ_CHUNK });
  const writer = await PopefWriter.create(outPath, { force: options.force, compressionLevel: options.compressionLevel, signal: options.signal });
  try {
    for (const [i, blob] of manifest.blobs.entries()) {
      try {
        await writeOne(writer, blob, stream, payloadPath);
      } catch (error) {
        if (error instanceof PopefError && error.file === undefined) {
          throw new PopefError(error.code, error.message, {
            file: `${manifestPath}#/blobs/${i}`,
            field: error.field,
            suggestion: error.suggestion,
            suggestedOption: error.suggestedOption,
          });
        }
        throw error;
      }
      options.onBlob?.(i, blob);
    }
    await writer.close();
  } catch (error) {
    await writer.abort();
    throw error;
  }
}

/**
 * The output may not be the manifest or one of its payloads (by inode, so a
 * hard link or a different spelling of the path counts): with --force the
 * rename at the end would replace the very file being read.
 */
async function refuseOwnInput(outPath: string, manifestPath: string, payloads: ReadonlyMap<string, string>): Promise<void> {
  const out = await stat(outPath).catch(() => undefined);
  if (out === undefined) return;
  const inputs: [string, string][] = [
    ['the manifest', manifestPath],
    ...[...payloads].map(([name, path]): [string, string] => [`payload file ${JSON.stringify(name)}`, path]),
  ];
  for (const [what, path] of inputs) {
    const info = await stat(path).catch(() => undefined);
    if (info !== undefined && info.dev === out.dev && info.ino === out.ino) {
      throw new PopefError(ErrorCode.Exists, `the output is ${what} this pack reads; writing it would destroy its own input`, {
        file: outPath,
        suggestion: 'choose another name for -o, for example -o model.popef',
      });
    }
  }
}

async function writeOne(
  writer: PopefWriter,
  blob: ManifestBlob,
  stream: (file: string) => AsyncIterable<Uint8Array>,
  payloadPath: (file: string) => string,
): Promise<void> {
  switch (blob.type) {
    case 'POPLAR_EXECUTABLE':
      return writer.writeExecutable(blob.name, stream(blob.file), { compress: blob.compress === true });
    case 'METADATA':
      return writer.writeMetadata(blob.metadata);
    case 'DATA_TENSOR':
      return writer.writeTensorData(blob, stream(blob.file));
    case 'DATA_FEED':
      return writer.writeFeedData(blob, stream(blob.file));
    case 'OPAQUE':
      return writer.writeOpaque(blob, stream(blob.file));
    case 'RAW': {
      const descriptor = new Uint8Array(
        await readRegularFile(payloadPath(blob.descriptorFile), { name: blob.descriptorFile, what: 'the descriptor file', limit: FILE_LIMITS.json }),
      );
      return writer.writeRaw({ typeCode: blob.typeCode, version: blob.version, codec: blob.codec, descriptor }, stream(blob.file));
    }
    case 'END_OF_SEGMENT':
      return writer.endSegment();
  }
}
