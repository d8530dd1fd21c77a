import { createWriteStream } from 'node:fs';
import { mkdir, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { removeStaleSiblings, tempSibling } from '../io/temp-names.js';
import { ErrorCode, PopefError, destinationExists, ioError } from '../errors.js';
import type { Blob, ReadWarning } from '../format/blob.js';
import { PopefFile } from '../format/reader.js';
import { MANIFEST_FORMAT, MANIFEST_VERSION, type Manifest, type ManifestBlob } from './manifest.js';
import { checkManifestModel, readManifest } from './pack.js';

/** How unpackFile writes the directory. */
export interface UnpackOptions {
  /** Replace an existing output directory. */
  readonly force?: boolean;
  /** Called once for each blob, as it is written (for progress). */
  readonly onBlob?: (index: number, blob: Blob) => void;
  /** Stops the unpack (Ctrl-C); the staging directory is removed. */
  readonly signal?: AbortSignal;
  /** The caller's working directory, which --force never replaces. */
  readonly workingDirectory?: string;
}

/** What unpackFile wrote. */
export interface UnpackResult {
  readonly manifest: Manifest;
  readonly files: readonly string[];
  /**
   * The model-level rule the file breaks (FORMAT.md section 8), if any: its
   * blobs are sound one by one, so they are extracted (that is how such a
   * file gets repaired), but pack refuses the manifest until it is fixed.
   */
  readonly modelProblem?: PopefError;
  /**
   * Blobs in a newer minor layout version than this reader's: their fields
   * added since are not in the manifest, so pack writes them without.
   */
  readonly newerMinor: readonly ReadWarning[];
}

/**
 * Writes DIR/manifest.json and one payload file per blob, verifying every
 * checksum first. The directory is assembled beside DIR and renamed into
 * place, so a failure (damage found, disk full) leaves nothing behind.
 */
export async function unpackFile(path: string, outDir: string, options: UnpackOptions = {}): Promise<UnpackResult> {
  // First: a killed --force may have moved the previous output aside, and putting it back changes what exists.
  await removeStaleSiblings(outDir);
  const existing = await stat(outDir).then(
    () => true,
    () => false,
  );
  if (existing && options.force !== true) {
    throw destinationExists(outDir, 'output directory already exists', 'directory');
  }
  if (existing) await checkReplaceable(path, outDir, options.workingDirectory);
  const file = await PopefFile.open(path);
  const staging = tempSibling(outDir, 'staging');
  try {
    await mkdir(staging).catch((error: unknown) => {
      throw ioError(error, outDir, 'create the output directory');
    });
    const blobs: ManifestBlob[] = [];
    const files: string[] = [];
    // Every end-of-segment marker is listed where it stands, so that pack
    // reproduces the segments (and so the bytes) of an appended-to file.
    const ends = file.segmentEnds;
    let nextEnd = 0;
    const flushEnds = (before: number): void => {
      while ((ends[nextEnd] ?? Infinity) < before) {
        blobs.push({ type: 'END_OF_SEGMENT' });
        nextEnd += 1;
      }
    };
    for (const blob of file.blobs) {
      flushEnds(blob.offset);
      if (options.signal?.aborted === true) throw new PopefError(ErrorCode.Io, 'interrupted; nothing was written', { file: outDir });
      // Between chunks of a large payload too: Ctrl-C must not wait for a whole checksum pass.
      await file.verifyBlob(blob, () => {
        if (options.signal?.aborted === true) throw new PopefError(ErrorCode.Io, 'interrupted; nothing was written', { file: outDir });
      });
      const stem = `${String(blob.index).padStart(3, '0')}-${blob.type.toLowerCase()}`;
      const payloadName = `${stem}.bin`;
      const write = async (name: string, chunks: AsyncIterable<Uint8Array>): Promise<void> => {
        try {
          await pipeline(Readable.from(chunks), createWriteStream(join(staging, name), { flags: 'wx' }), {
            signal: options.signal,
          });
        } catch (error) {
          if (error instanceof PopefError) throw error;
          throw ioError(error, join(outDir, name), 'write the payload file');
        }
        files.push(name);
      };
      switch (blob.kind) {
        case 'executable':
          await write(payloadName, file.payloadChunks(blob));
          blobs.push({ type: 'POPLAR_EXECUTABLE', name: blob.name, file: payloadName, ...(blob.compressed ? { compress: true } : {}) });
          break;
        case 'metadata':
          blobs.push({ type: 'METADATA', metadata: await file.readMetadata(blob) });
          break;
        case 'tensor':
          await write(payloadName, file.payloadChunks(blob));
          blobs.push({ type: 'DATA_TENSOR', name: blob.name, tensorInfo: blob.tensorInfo, file: payloadName });
          break;
        case 'feed':
          await write(payloadName, file.payloadChunks(blob));
          blobs.push({ type: 'DATA_FEED', name: blob.name, tensorInfo: blob.tensorInfo, sampleCount: blob.sampleCount, file: payloadName });
          break;
        case 'opaque':
          await write(payloadName, file.payloadChunks(blob));
          blobs.push({ type: 'OPAQUE', name: blob.name, executable: blob.executable, file: payloadName });
          break;
        case 'unknown': {
          const descriptorName = `${stem}.descriptor.bin`;
          const descriptor = await file.source.read(blob.descriptorOffset, blob.descriptorLength, 'blob descriptor');
          await writeFile(join(staging, descriptorName), descriptor, { flag: 'wx' });
          files.push(descriptorName);
          await write(payloadName, file.storedChunks(blob));
          blobs.push({
            type: 'RAW',
            typeCode: blob.typeCode,
            version: blob.version,
            codec: blob.codec,
            descriptorFile: descriptorName,
            file: payloadName,
          });
          break;
        }
      }
      options.onBlob?.(blob.index, blob);
    }
    flushEnds(Infinity);
    const manifest: Manifest = { format: MANIFEST_FORMAT, version: MANIFEST_VERSION, blobs };
    await writeFile(join(staging, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`, { flag: 'wx' }).catch((error: unknown) => {
      throw ioError(error, join(outDir, 'manifest.json'), 'write the manifest');
    });
    await moveIntoPlace(staging, outDir, existing);
    let modelProblem: PopefError | undefined;
    try {
      checkManifestModel(manifest, join(outDir, 'manifest.json'));
    } catch (error) {
      if (!(error instanceof PopefError) || error.code !== ErrorCode.Model) throw error;
      modelProblem = error;
    }
    const newerMinor = file.warnings.filter((w) => w.code === 'W_NEWER_MINOR_VERSION');
    return { manifest, files: ['manifest.json', ...files], newerMinor, ...(modelProblem === undefined ? {} : { modelProblem }) };
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    throw error;
  } finally {
    await file.close();
  }
}

/**
 * --force replaces only what unpack made: an empty directory, or one holding
 * nothing but a popef manifest and the payload files it lists. Anything else
 * in it (a web app's manifest.json, notes, sources) is a user's file, named
 * in the refusal. Never the directory that holds the input (`-o .` beside the
 * file would delete it), nor the working directory (the shell would be left
 * in a deleted directory).
 */
async function checkReplaceable(input: string, outDir: string, workingDirectory: string | undefined): Promise<void> {
  const refuse = (why: string): PopefError =>
    new PopefError(ErrorCode.Exists, `${why}; --force replaces only an earlier unpack`, {
      file: outDir,
      suggestion: 'choose a new directory for -o, or remove that one yourself',
    });
  if (isWithin(outDir, input)) {
    throw new PopefError(ErrorCode.Exists, 'the output directory holds the input file; replacing it would delete the input', {
      file: outDir,
      suggestion: 'choose a new directory for -o, for example -o unpacked',
    });
  }
  if (workingDirectory !== undefined && isWithin(outDir, workingDirectory)) {
    throw new PopefError(
      ErrorCode.Exists,
      'the output directory is the working directory (or holds it); replacing it would leave the shell in a deleted directory',
      {
        file: outDir,
        suggestion: 'cd out of it first, or choose a new directory for -o',
      },
    );
  }
  const info = await stat(outDir);
  if (!info.isDirectory()) throw refuse('the output path is not a directory');
  const entries = await readdir(outDir);
  if (entries.length === 0) return;
  if (!entries.includes('manifest.json')) throw refuse('the output directory holds files that popef unpack did not write (it has no manifest.json)');
  let manifest: Manifest;
  try {
    manifest = await readManifest(join(outDir, 'manifest.json'));
  } catch (error) {
    if (!(error instanceof PopefError)) throw error;
    throw refuse('its manifest.json is not a popef manifest');
  }
  const listed = new Set([
    'manifest.json',
    ...manifest.blobs.flatMap((blob) => ('file' in blob ? [blob.file, ...('descriptorFile' in blob ? [blob.descriptorFile] : [])] : [])),
  ]);
  const others = entries.filter((name) => !listed.has(name)).sort();
  if (others.length > 0) {
    const shown = others
      .slice(0, 5)
      .map((name) => JSON.stringify(name))
      .join(', ');
    throw refuse(
      `the output directory holds ${others.length === 1 ? 'a file' : `${others.length} files`} its manifest does not list (${shown}${others.length > 5 ? ', ...' : ''})`,
    );
  }
}

/** Whether `path` is `dir` or lies inside it. */
function isWithin(dir: string, path: string): boolean {
  const inside = relative(resolve(dir), resolve(path));
  return inside === '' || (!inside.startsWith('..') && !isAbsolute(inside));
}

async function moveIntoPlace(staging: string, outDir: string, replace: boolean): Promise<void> {
  try {
    if (replace) {
      const old = `${staging}.old`;
      await rename(outDir, old);
      await rename(staging, outDir);
      await rm(old, { recursive: true, force: true });
    } else {
      await rename(staging, outDir);
    }
  } catch (error) {
    throw ioError(error, outDir, 'move the output directory into place');
  }
}
