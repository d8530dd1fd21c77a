import { access, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { openRegularFile } from '../io/local-file.js';
import { commitAtomically } from '../io/commit.js';
import { removeStaleSiblings, tempSibling } from '../io/temp-names.js';
import { ErrorCode, PopefError, destinationExists, ioError } from '../errors.js';
import { ModelSet } from '../format/model-set.js';
import { PopefWriter } from '../format/writer.js';
import { schemaErrors } from '../json-schemas.js';
import { checkModelContents, type Where } from '../format/model-rules.js';
import type { Metadata, TensorInfo } from '../schema/model.js';
import type { ChildProcessPlugin, Exchange } from './child-plugin.js';
import { requireAvailable } from './plugin-api.js';
import type { Announcement } from './protocol.js';

/**
 * Conversion between files written by the Poplar SDK (unpublished
 * encoding) and the open layout, through the IPU bridge and the SDK's own
 * popef.Reader / popef.Writer. Payloads are streamed in chunks both ways:
 * this process never holds one whole.
 */

export interface ConvertOptions {
  readonly force?: boolean;
  /** Store executables zlib-compressed (import) / ask the SDK to compress them (export). */
  readonly compress?: boolean;
  readonly signal?: AbortSignal;
  /** Bytes of payload moved so far. */
  readonly onProgress?: (bytes: number) => void;
  /** Per-chunk timeout (default 300 s). */
  readonly timeoutMs?: number;
}

export interface ImportOptions extends ConvertOptions {
  /**
   * false: the executables' payloads are not read (each is written empty),
   * for commands that need only the metadata, the anchors and the blob list.
   */
  readonly executables?: boolean;
}

/** The bridge's warnings of a reply: what the SDK could not store or read. */
function stringsOf(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((w): w is string => typeof w === 'string') : [];
}

function available(bridge: ChildProcessPlugin): Promise<void> {
  return requireAvailable(bridge, 'the SDK bridge');
}

async function* counted(
  chunks: AsyncIterable<Uint8Array>,
  progress: { bytes: number },
  onProgress?: (bytes: number) => void,
): AsyncGenerator<Uint8Array> {
  for await (const c of chunks) {
    progress.bytes += c.byteLength;
    onProgress?.(progress.bytes);
    yield c;
  }
}

/** Path errors are found here, with our messages, before the bridge starts. */
async function mustExist(path: string, action: string): Promise<void> {
  try {
    await access(path);
  } catch (error) {
    throw ioError(error, path, action);
  }
}

/** Reads SDK-written files through the bridge and writes one open-layout file. */
export async function importSdkFiles(
  bridge: ChildProcessPlugin,
  files: readonly string[],
  out: string,
  options: ImportOptions = {},
): Promise<{ blobs: number; bytes: number; warnings: string[]; sdkVersion: string | null }> {
  // The bridge's SDK would block for ever on a FIFO: every input must be a regular file, checked here.
  for (const f of files) await (await openRegularFile(f, f, 'the file')).handle.close();
  await available(bridge);
  const writer = await PopefWriter.create(out, { force: options.force, signal: options.signal });
  const progress = { bytes: 0 };
  let blobs = 0;
  // What arrives is checked as a model set before the file is committed,
  // with the rules every reader applies; errors blame the SDK files.
  const where = { file: files.join(' + ') };
  const contents: ImportState['contents'] = { executables: [], metadata: [], tensors: [], feeds: [], opaques: [] };
  try {
    const request = { type: 'import', files, ...(options.executables === false ? { executables: false } : {}) };
    const imported = await bridge.withExchange(request, [], options.timeoutMs ?? 300_000, async (exchange) => {
      let current: { message: Record<string, unknown>; announced: readonly Announcement[] } = exchange;
      while (current.message.type !== 'imported') {
        await storeBlob(current, exchange, writer, { contents, where, progress, options });
        blobs += 1;
        current = await exchange.next();
      }
      return current.message;
    });
    checkModelContents(contents);
    await writer.close();
    const sdkVersion = typeof imported.sdkVersion === 'string' ? imported.sdkVersion : null;
    return { blobs, bytes: progress.bytes, warnings: stringsOf(imported.warnings), sdkVersion };
  } catch (error) {
    // The bridge, if it was left mid-stream, is stopped already (withExchange).
    await writer.abort();
    throw error;
  }
}

interface ImportState {
  readonly contents: {
    executables: { name: string; where: Where }[];
    metadata: { metadata: Metadata; where: Where }[];
    tensors: { name: string; tensorInfo: TensorInfo; where: Where }[];
    feeds: { name: string; where: Where }[];
    opaques: { name: string; executable: string; where: Where }[];
  };
  readonly where: Where;
  readonly progress: { bytes: number };
  readonly options: ConvertOptions;
}

/** Stores one blob message of an import, with its payload's chunks. */
async function storeBlob(
  current: { message: Record<string, unknown>; announced: readonly Announcement[] },
  exchange: Exchange,
  writer: PopefWriter,
  state: ImportState,
): Promise<void> {
  const { contents, where, progress, options } = state;
  const m = current.message as Record<string, unknown> & {
    kind?: string;
    name?: string;
    executable?: string;
    tensorInfo?: TensorInfo;
    sampleCount?: number;
    metadata?: unknown;
  };
  if (m.type !== 'blob') throw new PopefError(ErrorCode.Plugin, `the SDK bridge sent an unexpected "${String(m.type)}" during import`, {});
  const announcement = current.announced[0];
  // The writer stores each chunk before it asks for the next, except when
  // it compresses (zlib queues its input): only then are chunks fresh buffers.
  const payload = (reuse = true): AsyncIterable<Uint8Array> => {
    if (announcement === undefined)
      throw new PopefError(ErrorCode.Plugin, `the SDK bridge sent no data for ${m.kind ?? 'a blob'} "${m.name ?? ''}"`, {});
    return counted(exchange.chunks(announcement, reuse), progress, options.onProgress);
  };
  const name = m.name ?? '';
  const tensorInfo = m.tensorInfo ?? { dtype: 'U8', shape: [] };
  switch (m.kind) {
    case 'executable':
      await writer.writeExecutable(name, payload(options.compress !== true), { compress: options.compress });
      contents.executables.push({ name, where });
      break;
    case 'metadata': {
      const problems = schemaErrors('manifest', { format: 'popef-open-manifest', version: 1, blobs: [{ type: 'METADATA', metadata: m.metadata }] });
      if (problems.length > 0)
        throw new PopefError(ErrorCode.Plugin, `the SDK bridge sent metadata that does not fit the open layout: ${problems.join('; ')}`, {});
      const metadata = m.metadata as Metadata;
      await writer.writeMetadata(metadata);
      contents.metadata.push({ metadata, where });
      break;
    }
    case 'tensor':
      await writer.writeTensorData({ name, tensorInfo }, payload());
      contents.tensors.push({ name, tensorInfo, where });
      break;
    case 'feed':
      await writer.writeFeedData({ name, tensorInfo, sampleCount: m.sampleCount ?? 0 }, payload());
      contents.feeds.push({ name, where });
      break;
    case 'opaque': {
      const executable = m.executable ?? '';
      await writer.writeOpaque({ name, executable }, payload());
      contents.opaques.push({ name, executable, where });
      break;
    }
    default:
      throw new PopefError(ErrorCode.Plugin, `the SDK bridge sent a blob of unknown kind "${String(m.kind)}"`, {});
  }
}

/** Writes an open-layout model set as one SDK-written file, through the bridge. */
export async function exportToSdk(
  bridge: ChildProcessPlugin,
  files: readonly string[],
  out: string,
  options: ConvertOptions = {},
): Promise<{ blobs: number; bytes: number; skipped: string[]; warnings: string[] }> {
  await mustExist(dirname(out), 'find the destination directory');
  await available(bridge);
  if (options.force !== true) {
    const exists = await access(out).then(
      () => true,
      () => false,
    );
    if (exists) throw destinationExists(out, 'destination already exists', 'name');
  }
  await removeStaleSiblings(out);
  const temp = tempSibling(out, 'tmp');
  const set = await ModelSet.open(files);
  const progress = { bytes: 0 };
  const skipped: string[] = [];
  try {
    const blobs: Record<string, unknown>[] = [];
    const sources: { announcement: Announcement; chunks: AsyncIterable<Uint8Array> }[] = [];
    const metadata: Metadata[] = [];
    // Opening the set decoded every model's metadata already.
    const decoded = new Map(
      set.models.flatMap((m) => (m.metadataBlob !== undefined && m.metadata !== undefined ? [[m.metadataBlob, m.metadata] as const] : [])),
    );
    for (const b of set.blobs) {
      const file = set.fileOf(b);
      const add = (entry: Record<string, unknown> & { readonly name: string }, bytes: number): void => {
        blobs.push({ ...entry, tensor: sources.length });
        sources.push({
          announcement: { name: entry.name, dtype: 'U8', shape: [bytes], bytes },
          chunks: counted(file.payloadChunks(b), progress, options.onProgress),
        });
      };
      switch (b.kind) {
        case 'executable':
          add({ kind: 'executable', name: b.name }, b.uncompressedSize);
          break;
        case 'metadata':
          metadata.push(decoded.get(b) ?? (await file.readMetadata(b)));
          break;
        case 'tensor':
          add({ kind: 'tensor', name: b.name, tensorInfo: b.tensorInfo }, b.payloadLength);
          break;
        case 'feed':
          add({ kind: 'feed', name: b.name, tensorInfo: b.tensorInfo, sampleCount: b.sampleCount }, b.payloadLength);
          break;
        case 'opaque':
          add({ kind: 'opaque', name: b.name, executable: b.executable }, b.payloadLength);
          break;
        case 'unknown':
          skipped.push(`blob of unknown type ${b.typeCode} at offset ${b.offset} of ${b.file}`);
          break;
      }
    }
    const reply = await bridge.withExchange(
      { type: 'export', path: temp, compress: options.compress === true, model: { metadata, blobs } },
      sources,
      options.timeoutMs ?? 300_000,
      async (r) => {
        if (r.message.type !== 'exported') throw new PopefError(ErrorCode.Plugin, `the SDK bridge answered "${r.message.type}" to export`, {});
        return Promise.resolve(r.message);
      },
    );
    // What this SDK release could not store (deviceIterations before SDK 3.3).
    const warnings = stringsOf(reply.warnings);

    await commitAtomically(temp, out, { force: options.force, what: 'exported file' });
    return { blobs: blobs.length + metadata.length, bytes: progress.bytes, skipped, warnings };
  } catch (error) {
    // A bridge that failed mid-export was stopped before withExchange gave
    // the error back: it cannot write the temporary file after its removal.
    await rm(temp, { force: true });
    throw error;
  } finally {
    await set.close();
  }
}
