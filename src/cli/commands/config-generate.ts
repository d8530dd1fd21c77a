import { resolve } from 'node:path';
import { ErrorCode, PopefError } from '../../errors.js';
import { openModelSetReadBy } from './open-popef.js';
import { describeOpenSet, type FileToDescribe } from './describe-run.js';
import type { PopefDescription } from '../../inspect/description.js';
import { sourceGraphBlob } from '../../run/source-graph.js';
import { describedModel, isDescriptionArgument, parseDescription } from '../../inspect/description.js';
import { FILE_LIMITS, readRegularText } from '../../io/local-file.js';
import type { Metadata } from '../../schema/model.js';
import { configFromPopef, type ConfigOptions, type GeneratedConfig } from '../../triton/config-from-popef.js';
import { renderNameMap } from '../../triton/name-map.js';
import { printPbtxt } from '../../triton/pbtxt-printer.js';
import type { CliIo } from '../io.js';
import type { ConfigFlags } from './config-flags.js';

function usage(message: string): PopefError {
  return new PopefError(ErrorCode.InvalidInput, message, { suggestion: 'see popef config --help' });
}

function pair(value: string, what: string): [string, string] {
  const at = value.indexOf('=');
  if (at <= 0) throw usage(`expected ${what}, got "${value}"`);
  return [value.slice(0, at), value.slice(at + 1)];
}

export interface GeneratedFiles extends GeneratedConfig {
  readonly pbtxt: string;
  readonly nameMapText: string;
  /** The PopEF files, the one holding the executable first (none when generated from a description). */
  readonly popefFiles: readonly string[];
  /** The PopEF description the config was generated from, in place of the PopEF. */
  readonly descriptionFile?: string;
  readonly executable: string;
  /** How many models the files hold (scaffold places all files, so it needs exactly one). */
  readonly modelCount: number;
  /** Whether a file was not in the open layout and the Poplar SDK's reader read it (scaffold then writes a description beside it). */
  readonly readBySdk: boolean;
  /**
   * The description of an SDK-written set, made from the set as it was open
   * (GenerateOptions.describeAs), for scaffold to place beside the files.
   */
  readonly sdkDescription?: PopefDescription;
  /** Whether the model carries its source ONNX graph (what the cpu plugin runs); unknown for a description, which does not record opaque blobs. */
  readonly hasGraph: boolean | 'unknown';
}

/** What generateFiles also does for scaffold. */
export interface GenerateOptions {
  /**
   * When the Poplar SDK reads the files: the names the description records
   * for them (given the files, the executable's first), so that it is made
   * from the one SDK read (whole executables included) instead of a second.
   */
  readonly describeAs?: (popefFiles: readonly string[]) => readonly FileToDescribe[];
}

/** Opens the files (or reads a description), picks the model, generates config.pbtxt and name_map.json text. */
export async function generateFiles(
  files: readonly string[],
  flags: ConfigFlags,
  modelName: string | undefined,
  io: CliIo,
  options: GenerateOptions = {},
): Promise<GeneratedFiles> {
  const paths = files.map((f) => resolve(io.cwd, f));
  const only = paths[0];
  // A PopEF description (from popef describe) stands in for the PopEF: a config can be generated where the file cannot be read.
  if (paths.length === 1 && only !== undefined && isDescriptionArgument(only)) {
    const description = parseDescription(await readRegularText(only, { what: 'the PopEF description', limit: FILE_LIMITS.json }), files[0] ?? only);
    const model = describedModel(description, files[0] ?? only, flags.executable);
    return {
      ...generate(model.metadata, model.storedTensorNames, flags, modelName),
      popefFiles: [],
      descriptionFile: only,
      executable: model.name,
      modelCount: description.models.length,
      readBySdk: false,
      hasGraph: 'unknown',
    };
  }
  // Metadata and anchors only, unless a description is to be made: an SDK-written file's executable is not copied to read them.
  const { set, readBy } = await openModelSetReadBy(paths, io, { executables: options.describeAs !== undefined });
  try {
    const model = set.model(flags.executable);
    const metadata = model.metadata;
    if (metadata === undefined) {
      throw usage(`executable "${model.name}" has no metadata blob, so its inputs and outputs are unknown`);
    }
    const owner = set.fileOf(model.executable).source.name;
    const popefFiles = [owner, ...paths.filter((p) => p !== owner)];
    const readBySdk = readBy.some((r) => r.reader === 'poplar-sdk');
    // readBy follows paths and describeAs the executable's file first; the reader's name takes readBy as a whole, so the orders need not agree.
    const sdkDescription =
      readBySdk && options.describeAs !== undefined ? await describeOpenSet(set, readBy, options.describeAs(popefFiles), io) : undefined;
    return {
      ...generate(metadata, set.storedTensorNames, flags, modelName),
      popefFiles,
      executable: model.name,
      modelCount: set.models.length,
      readBySdk,
      ...(sdkDescription === undefined ? {} : { sdkDescription }),
      hasGraph: sourceGraphBlob(model.opaques) !== undefined,
    };
  } finally {
    await set.close();
  }
}

function generate(
  metadata: Metadata,
  storedTensorNames: ReadonlySet<string>,
  flags: ConfigFlags,
  modelName: string | undefined,
): GeneratedConfig & { pbtxt: string; nameMapText: string } {
  const names = new Map<string, string>();
  for (const n of flags.name ?? []) {
    const [anchor, name] = pair(n, '--name ANCHOR=NAME');
    if (names.has(anchor)) throw usage(`--name gives anchor "${anchor}" two names`);
    names.set(anchor, name);
  }
  const options: ConfigOptions = {
    modelName,
    names,
    deviceIterations: flags.deviceIterations,
    gradientAccumulation: flags.gradientAccumulation,
    maxBatchSize: flags.maxBatchSize,
    batching: flags.batching,
    parameters: (flags.parameter ?? []).map((p) => pair(p, '--parameter KEY=VALUE')),
    dynamicBatching:
      flags.dynamicBatching === true
        ? { preferredBatchSizes: flags.preferredBatchSize, maxQueueDelayMicroseconds: flags.maxQueueDelayUs }
        : undefined,
  };
  if (flags.dynamicBatching !== true && (flags.preferredBatchSize !== undefined || flags.maxQueueDelayUs !== undefined)) {
    throw usage('--preferred-batch-size and --max-queue-delay-us need --dynamic-batching');
  }
  const generated = configFromPopef(metadata, storedTensorNames, options);
  return { ...generated, pbtxt: printPbtxt(generated.config, { tritonVersion: flags.tritonVersion }), nameMapText: renderNameMap(generated.nameMap) };
}
