import type { ModelSet } from '../format/model-set.js';
import { ErrorCode, PopefError } from '../errors.js';

/**
 * The model as the `open` request of the plugin protocol carries it: the
 * metadata as JSON and every payload the runtime may need as a tensor
 * frame, so that a plugin never parses the PopEF open layout itself.
 */
export interface ModelPayload {
  readonly model: {
    readonly metadata: unknown;
    readonly blobs: readonly Record<string, unknown>[];
  };
  readonly payloads: readonly { readonly name: string; readonly data: Uint8Array }[];
}

async function readAll(chunks: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const c of chunks) parts.push(c);
  return Buffer.concat(parts);
}

export async function modelPayload(set: ModelSet, executable: string): Promise<ModelPayload> {
  const model = set.model(executable);
  if (model.metadata === undefined) {
    throw new PopefError(ErrorCode.InvalidInput, `executable "${executable}" has no metadata: its inputs and outputs are unknown`, {
      suggestion: 'give every file of the model (metadata is usually in executable.popef)',
    });
  }
  const payloads: { name: string; data: Uint8Array }[] = [];
  const blobs: Record<string, unknown>[] = [];
  const add = async (entry: Record<string, unknown>, blob: Parameters<ModelSet['fileOf']>[0]): Promise<void> => {
    payloads.push({ name: String(entry.name ?? entry.kind), data: await readAll(set.fileOf(blob).payloadChunks(blob)) });
    blobs.push({ ...entry, tensor: payloads.length - 1 });
  };
  await add({ kind: 'executable', name: model.executable.name }, model.executable);
  for (const t of model.tensors) await add({ kind: 'tensor', name: t.name, tensorInfo: t.tensorInfo }, t);
  for (const f of set.feeds) await add({ kind: 'feed', name: f.name, tensorInfo: f.tensorInfo, sampleCount: f.sampleCount }, f);
  for (const o of model.opaques) await add({ kind: 'opaque', name: o.name, executable: o.executable }, o);
  return { model: { metadata: model.metadata, blobs }, payloads };
}
