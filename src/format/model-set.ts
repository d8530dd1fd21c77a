import { ErrorCode, PopefError } from '../errors.js';
import type { ByteSource } from '../io/byte-source.js';
import type { Metadata } from '../schema/model.js';
import type { Blob, ExecutableBlob, FeedDataBlob, MetadataBlob, OpaqueBlob, ReadWarning, TensorDataBlob, UnknownBlob } from './blob.js';
import { checkModelContents } from './model-rules.js';
import { PopefFile } from './reader.js';

/** One model: an executable with its metadata and the blobs linked to it. */
export interface Model {
  readonly name: string;
  readonly executable: ExecutableBlob;
  readonly metadata: Metadata | undefined;
  readonly metadataBlob: MetadataBlob | undefined;
  readonly opaques: readonly OpaqueBlob[];
  /** Tensor data blobs whose name matches an anchor of this model. */
  readonly tensors: readonly TensorDataBlob[];
}

/**
 * Several PopEF files read as one set of models, linked by executable name,
 * the way Graphcore's Reader merges every file it parses. Opening reads
 * headers, descriptors and metadata; payloads stay on disk.
 */
export class ModelSet {
  private constructor(
    readonly files: readonly PopefFile[],
    readonly models: readonly Model[],
    readonly tensors: readonly TensorDataBlob[],
    readonly feeds: readonly FeedDataBlob[],
    readonly opaques: readonly OpaqueBlob[],
    readonly unknown: readonly UnknownBlob[],
    private readonly owners: ReadonlyMap<Blob, PopefFile>,
  ) {}

  /**
   * Opens every file (paths or byte sources) and links their blobs into
   * models by executable name; checks the model-level rules. The byte
   * sources given become the set's: all of them are closed when it fails.
   */
  static async open(inputs: readonly (string | ByteSource)[]): Promise<ModelSet> {
    const files: PopefFile[] = [];
    try {
      for (let k = 0; k < inputs.length; k++) files.push(await PopefFile.open(inputs[k] as string | ByteSource));
      return await ModelSet.fromFiles(files);
    } catch (error) {
      await Promise.all(files.map((f) => f.close()));
      // Those not reached yet (PopefFile.open closes the one that failed).
      for (const i of inputs.slice(files.length + 1)) if (typeof i !== 'string') await i.close();
      throw error;
    }
  }

  /** Builds and validates a set from files already open (they stay owned by the set). */
  static async fromFiles(files: readonly PopefFile[]): Promise<ModelSet> {
    const owners = new Map<Blob, PopefFile>();
    const executables: ExecutableBlob[] = [];
    const metadata: { blob: MetadataBlob; metadata: Metadata }[] = [];
    const tensors: TensorDataBlob[] = [];
    const feeds: FeedDataBlob[] = [];
    const opaques: OpaqueBlob[] = [];
    const unknown: UnknownBlob[] = [];
    // Indexed: validate opens a set per model, before V8 optimises this, when for-of makes an iterator and a result
    // object per step (issue 26).
    for (let f = 0; f < files.length; f++) {
      const file = files[f] as PopefFile;
      for (let b = 0; b < file.blobs.length; b++) {
        const blob = file.blobs[b] as Blob;
        owners.set(blob, file);
        switch (blob.kind) {
          case 'executable':
            executables.push(blob);
            break;
          case 'metadata':
            metadata.push({ blob, metadata: await file.readMetadata(blob) });
            break;
          case 'tensor':
            tensors.push(blob);
            break;
          case 'feed':
            feeds.push(blob);
            break;
          case 'opaque':
            opaques.push(blob);
            break;
          case 'unknown':
            unknown.push(blob);
            break;
        }
      }
    }
    const where = (b: Blob): { file: string; offset: number } => ({ file: b.file, offset: b.offset });
    checkModelContents({
      executables: executables.map((e) => ({ name: e.name, where: where(e) })),
      metadata: metadata.map((m) => ({ metadata: m.metadata, where: where(m.blob) })),
      tensors: tensors.map((t) => ({ name: t.name, tensorInfo: t.tensorInfo, where: where(t) })),
      feeds: feeds.map((f) => ({ name: f.name, where: where(f) })),
      opaques: opaques.map((o) => ({ name: o.name, executable: o.executable, where: where(o) })),
    });
    const models = executables.map((executable): Model => {
      const m = metadata.find((x) => x.metadata.executable === executable.name);
      const anchorNames = new Set(m?.metadata.anchors.map((a) => a.name) ?? []);
      return {
        name: executable.name,
        executable,
        metadata: m?.metadata,
        metadataBlob: m?.blob,
        opaques: opaques.filter((o) => o.executable === executable.name),
        tensors: tensors.filter((t) => anchorNames.has(t.name)),
      };
    });
    return new ModelSet(files, models, tensors, feeds, opaques, unknown, owners);
  }

  /**
   * The model to work on: the one named, or the only one. Errors list the
   * executables to choose from.
   */
  model(executable?: string): Model {
    const names = this.models.map((m) => JSON.stringify(m.name)).join(', ');
    if (executable !== undefined) {
      const found = this.models.find((m) => m.name === executable);
      if (found === undefined) {
        throw new PopefError(ErrorCode.InvalidInput, `no executable named "${executable}" (the files hold: ${names || 'none'})`, {
          suggestion: 'pick one of the executables listed',
        });
      }
      return found;
    }
    const only = this.models[0];
    if (only === undefined) {
      throw new PopefError(ErrorCode.InvalidInput, 'these files hold no executable', {
        file: this.files[0]?.name,
        suggestion: 'give the file with the executable (for example executable.popef) as well',
      });
    }
    if (this.models.length > 1) {
      throw new PopefError(ErrorCode.InvalidInput, `these files hold ${this.models.length} models (${names})`, {
        suggestion: 'choose one with --executable NAME',
      });
    }
    return only;
  }

  /** Names of all tensor data blobs: anchors they feed are not user-provided. */
  get storedTensorNames(): ReadonlySet<string> {
    return new Set(this.tensors.map((t) => t.name));
  }

  /** Every blob of every file, in file order. */
  get blobs(): readonly Blob[] {
    return this.files.flatMap((f) => f.blobs);
  }

  get warnings(): readonly ReadWarning[] {
    return this.files.flatMap((f) => f.warnings);
  }

  /** The file a blob was read from, to read its payload. */
  fileOf(blob: Blob): PopefFile {
    const file = this.owners.get(blob);
    if (file === undefined) throw new RangeError('blob does not belong to this model set');
    return file;
  }

  /** Closes every file the set opened. */
  async close(): Promise<void> {
    await Promise.all(this.files.map((f) => f.close()));
  }
}
