import { resolve } from 'node:path';
import { ErrorCode, PopefError } from '../../errors.js';
import { openModelSet } from './open-popef.js';
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
  /** The PopEF files, the one holding the executable first. */
  readonly popefFiles: readonly string[];
  readonly executable: string;
  /** How many models the files hold (scaffold places all files, so it needs exactly one). */
  readonly modelCount: number;
}

/** Opens the files, picks the model, generates config.pbtxt and name_map.json text. */
export async function generateFiles(files: readonly string[], flags: ConfigFlags, modelName: string | undefined, io: CliIo): Promise<GeneratedFiles> {
  const paths = files.map((f) => resolve(io.cwd, f));
  // Metadata and anchors only: an SDK-written file's executable is not copied to read them.
  const set = await openModelSet(paths, io, { executables: false });
  try {
    const model = set.model(flags.executable);
    const metadata = model.metadata;
    if (metadata === undefined) {
      throw usage(`executable "${model.name}" has no metadata blob, so its inputs and outputs are unknown`);
    }
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
    const generated = configFromPopef(metadata, set.storedTensorNames, options);
    const pbtxt = printPbtxt(generated.config, { tritonVersion: flags.tritonVersion });
    const owner = set.fileOf(model.executable).source.name;
    const popefFiles = [owner, ...paths.filter((p) => p !== owner)];
    return { ...generated, pbtxt, nameMapText: renderNameMap(generated.nameMap), popefFiles, executable: model.name, modelCount: set.models.length };
  } finally {
    await set.close();
  }
}
