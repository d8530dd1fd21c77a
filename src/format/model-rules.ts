import { ErrorCode, PopefError } from '../errors.js';
import { sameTensorInfo, sizeInBytes, type Metadata, type TensorInfo } from '../schema/model.js';

/**
 * Model-level consistency of a set of blobs, independent of where they came
 * from: the reader runs it over what it read, the packer over a manifest
 * before writing anything. Each rule names the blob it blames.
 */

/** Where a part of a model was found: a file, and the byte offset of its blob. */
export interface Where {
  readonly file: string;
  readonly offset?: number;
}

/** What a set of files holds, with where each part was found: the input of the model-level rules (FORMAT.md section 8). */
export interface ModelContents {
  readonly executables: readonly { readonly name: string; readonly where: Where }[];
  readonly metadata: readonly { readonly metadata: Metadata; readonly where: Where }[];
  readonly tensors: readonly { readonly name: string; readonly tensorInfo: TensorInfo; readonly where: Where }[];
  readonly feeds: readonly { readonly name: string; readonly where: Where }[];
  readonly opaques: readonly { readonly name: string; readonly executable: string; readonly where: Where }[];
}

function modelError(where: Where, field: string, message: string, suggestion: string): PopefError {
  return new PopefError(ErrorCode.Model, message, { file: where.file, offset: where.offset, field, suggestion });
}

function describeInfo(info: TensorInfo): string {
  return `${info.dtype} [${info.shape.join(', ')}] (${sizeInBytes(info)} bytes)`;
}

/**
 * Throws the first inconsistency found, as an E_MODEL error. Its loops are
 * indexed: validate runs it for every model, before V8 optimises it, when
 * for-of makes an iterator and a result object per step (issue 26).
 */
export function checkModelContents(c: ModelContents): void {
  const executables = new Map<string, Where>();
  for (let k = 0; k < c.executables.length; k++) {
    const e = c.executables[k] as ModelContents['executables'][number];
    if (e.name === '') {
      throw modelError(e.where, 'executable name', 'executable has an empty name', 'every executable needs a unique, non-empty name');
    }
    const previous = executables.get(e.name);
    if (previous !== undefined) {
      throw modelError(
        e.where,
        'executable name',
        `executable name "${e.name}" is used twice (also at ${previous.file}${previous.offset === undefined ? '' : ` offset ${previous.offset}`})`,
        'executable names must be unique across all files of a model set',
      );
    }
    executables.set(e.name, e.where);
  }

  const described = new Set<string>();
  for (let k = 0; k < c.metadata.length; k++) {
    const { metadata, where } = c.metadata[k] as ModelContents['metadata'][number];
    if (!executables.has(metadata.executable)) {
      throw modelError(
        where,
        'metadata.executable',
        `metadata refers to executable "${metadata.executable}", which is not in the model set`,
        'give every file of the model (for example executable.popef and variables.popef) together',
      );
    }
    if (described.has(metadata.executable)) {
      throw modelError(
        where,
        'metadata.executable',
        `executable "${metadata.executable}" has more than one metadata blob`,
        'keep one metadata blob per executable',
      );
    }
    described.add(metadata.executable);
    const seen = new Set<string>();
    metadata.anchors.forEach((a, i) => {
      if (a.name === '') throw modelError(where, `anchors[${i}].name`, 'anchor has an empty name', 'every anchor needs a name');
      const key = `${a.type}\u0000${a.name}`;
      if (seen.has(key)) {
        throw modelError(
          where,
          `anchors[${i}]`,
          `anchor "${a.name}" of type ${a.type} appears twice in the metadata of "${metadata.executable}"`,
          'anchor names must be unique per type',
        );
      }
      seen.add(key);
    });
  }

  for (let k = 0; k < c.opaques.length; k++) {
    const o = c.opaques[k] as ModelContents['opaques'][number];
    if (!executables.has(o.executable)) {
      throw modelError(
        o.where,
        'opaque.executable',
        `opaque blob "${o.name}" refers to executable "${o.executable}", which is not in the model set`,
        'link opaque blobs to an executable of the same model set',
      );
    }
  }

  const anchorsByName = new Map<string, TensorInfo[]>();
  for (let k = 0; k < c.metadata.length; k++) {
    const { metadata } = c.metadata[k] as ModelContents['metadata'][number];
    for (let j = 0; j < metadata.anchors.length; j++) {
      const a = metadata.anchors[j] as Metadata['anchors'][number];
      const list = anchorsByName.get(a.name) ?? [];
      list.push(a.tensorInfo);
      anchorsByName.set(a.name, list);
    }
  }
  const tensorNames = new Set<string>();
  for (let k = 0; k < c.tensors.length; k++) {
    const t = c.tensors[k] as ModelContents['tensors'][number];
    if (t.name === '') throw modelError(t.where, 'tensor name', 'tensor data blob has an empty name', 'name tensor data after the anchor it holds');
    if (tensorNames.has(t.name)) {
      throw modelError(t.where, 'tensor name', `tensor data "${t.name}" is stored twice`, 'keep one tensor data blob per anchor');
    }
    tensorNames.add(t.name);
    // A file of tensor data alone (variables.popef) has no anchors to match.
    if (c.metadata.length === 0) continue;
    const candidates = anchorsByName.get(t.name);
    if (candidates === undefined) {
      throw modelError(
        t.where,
        'tensor name',
        `tensor data "${t.name}" matches no anchor of any metadata`,
        'name tensor data after the anchor it holds',
      );
    }
    const first = candidates[0];
    if (first !== undefined && !candidates.some((info) => sameTensorInfo(info, t.tensorInfo))) {
      throw modelError(
        t.where,
        'tensor info',
        `tensor data "${t.name}" is ${describeInfo(t.tensorInfo)}, but its anchor is ${describeInfo(first)}`,
        'store the tensor with the dtype and shape of its anchor',
      );
    }
  }
  const feedNames = new Set<string>();
  for (let k = 0; k < c.feeds.length; k++) {
    const f = c.feeds[k] as ModelContents['feeds'][number];
    if (feedNames.has(f.name)) throw modelError(f.where, 'feed name', `feed data "${f.name}" is stored twice`, 'keep one feed data blob per name');
    feedNames.add(f.name);
  }
}
