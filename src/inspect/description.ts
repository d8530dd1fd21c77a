import { basename } from 'node:path';
import { ErrorCode, PopefError } from '../errors.js';
import type { ModelSet } from '../format/model-set.js';
import { MAX_READ_CHUNK, type ByteSource } from '../io/byte-source.js';
import { nodeCrypto } from '../io/node-crypto.js';
import { schemaErrors } from '../json-schemas.js';
import type { Anchor, Metadata } from '../schema/model.js';
import { buildReport, metadataFields, type ModelReport } from './report.js';

/**
 * A PopEF description: FILE.json, committed beside FILE (for example
 * `1/executable.popef.json`), holding what `popef validate`, `config` and
 * `scaffold` need of a PopEF without reading it: each model's anchors and
 * metadata exactly as `popef dump --json` reports them, the size and SHA-256
 * of every file described, and which reader read them. Written once by
 * `popef describe` where the file can be read (on a machine with the Poplar
 * SDK for an SDK-written export), it lets a machine without the SDK
 * cross-check the repository. Its JSON Schema is
 * schemas/popef-description.schema.json.
 */

export interface DescribedFile {
  /** The file's name, relative to the description's directory. */
  readonly name: string;
  readonly size: number;
  readonly sha256: string;
}

/** A PopEF description (`FILE.json`, schemas/popef-description.schema.json): what validate cross-checks where the PopEF itself cannot be read. */
export interface PopefDescription {
  readonly tool: 'popef-toolkit';
  readonly kind: 'popef-description';
  readonly descriptionVersion: 1;
  /** What read the files: "popef-toolkit <version> open-layout reader", or the SDK's reader through the bridge. */
  readonly reader: string;
  readonly files: readonly DescribedFile[];
  readonly models: readonly ModelReport[];
}

/** The description file of a PopEF file: its name with `.json` appended. */
export function descriptionPathOf(popefPath: string): string {
  return `${popefPath}.json`;
}

/** Whether a file name is a description's (FILE.popef.json): how validate finds one beside its PopEF. */
export function isDescriptionName(name: string): boolean {
  return name.endsWith('.popef.json');
}

/**
 * Whether a file given to config or scaffold is read as a description: any
 * `.json` (a PopEF is no JSON), since `popef describe -o` writes any name.
 */
export function isDescriptionArgument(name: string): boolean {
  return name.endsWith('.json');
}

/** SHA-256 of a whole source, hex, read in chunks (a PopEF can be gigabytes). */
export async function sha256Of(source: ByteSource): Promise<string> {
  const h = nodeCrypto().createHash('sha256');
  for (let at = 0; at < source.size; at += MAX_READ_CHUNK) h.update(await source.read(at, Math.min(MAX_READ_CHUNK, source.size - at), 'file bytes'));
  return h.digest('hex');
}

/**
 * Describes an open model set. `files` are the described files' names (as
 * recorded: base names), sizes and hashes, in the set's file order.
 */
export function describeModelSet(
  set: ModelSet,
  files: readonly DescribedFile[],
  reader: string,
  recordedName: (file: string) => string = basename,
): PopefDescription {
  return { tool: 'popef-toolkit', kind: 'popef-description', descriptionVersion: 1, reader, files, models: describedModels(set, recordedName) };
}

/**
 * The models of a description: dump's model reports, each naming its file
 * by `recordedName` of the name it was opened by (default: its base name).
 */
export function describedModels(set: ModelSet, recordedName: (file: string) => string = basename): PopefDescription['models'] {
  return buildReport(set).models.map((m) => ({ ...m, file: recordedName(m.file) }));
}

/** Parses and checks a description's text; a PopefError (E_INVALID_INPUT) names what is wrong. */
export function parseDescription(text: string, file: string): PopefDescription {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new PopefError(ErrorCode.InvalidInput, `the PopEF description is not valid JSON: ${(error as Error).message}`, {
      file,
      suggestion: 'write it again with popef describe',
    });
  }
  const problems = schemaErrors('popef-description', value);
  if (problems.length > 0) {
    throw new PopefError(ErrorCode.InvalidInput, `the PopEF description does not match its schema: ${problems.slice(0, 3).join('; ')}`, {
      file,
      suggestion: 'write it again with popef describe (schemas/popef-description.schema.json)',
    });
  }
  return value as PopefDescription;
}

/**
 * The one model of a description, as the metadata and stored tensor names
 * the PopEF readers give (what `popef config` and the validate rules take).
 */
export function describedModel(
  description: Pick<PopefDescription, 'models'>,
  file: string,
  executable?: string,
): { name: string; metadata: Metadata; storedTensorNames: ReadonlySet<string> } {
  const candidates = executable === undefined ? description.models : description.models.filter((m) => m.executable === executable);
  const model = candidates[0];
  if (model === undefined || (executable === undefined && candidates.length > 1)) {
    const names = description.models.map((m) => `"${m.executable}"`).join(', ') || 'none';
    throw new PopefError(
      ErrorCode.InvalidInput,
      executable === undefined
        ? `the description holds ${description.models.length} models (${names}); choose one`
        : `the description holds no executable "${executable}" (it holds ${names})`,
      {
        file,
        suggestion: '--executable NAME picks one',
      },
    );
  }
  if (model.metadata === null)
    throw new PopefError(
      ErrorCode.InvalidInput,
      `executable "${model.executable}" of the description has no metadata, so its inputs and outputs are unknown`,
      { file },
    );
  const m = model.metadata;
  const anchors: Anchor[] = m.anchors.map((a) => ({
    name: a.name,
    handle: a.handle,
    tensorInfo: { dtype: a.dtype, shape: a.shape },
    isPerReplica: a.isPerReplica,
    type: a.type,
    programs: a.programs,
  }));
  const metadata: Metadata = { ...metadataFields(m), anchors };
  return { name: model.executable, metadata, storedTensorNames: new Set(model.tensors) };
}
