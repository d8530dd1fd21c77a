import { Option, type Command } from 'commander';
import { ErrorCode, PopefError } from '../../errors.js';
import { resolve } from 'node:path';
import { ModelSet } from '../../format/model-set.js';
import { configFromPopef, type ConfigOptions, type GeneratedConfig } from '../../triton/config-from-popef.js';
import { renderNameMap } from '../../triton/name-map.js';
import { DEFAULT_TRITON_VERSION, printPbtxt } from '../../triton/pbtxt-printer.js';
import type { CliIo } from '../io.js';
import { parseIntOption } from './options.js';

/** The options `popef config` and `popef scaffold` share. */
export interface ConfigFlags {
  readonly executable?: string;
  readonly name?: string[];
  readonly deviceIterations?: number;
  readonly gradientAccumulation?: number;
  readonly maxBatchSize?: number;
  readonly batching?: 'auto' | 'none';
  readonly parameter?: string[];
  readonly dynamicBatching?: boolean;
  readonly preferredBatchSize?: number[];
  readonly maxQueueDelayUs?: number;
  readonly tritonVersion?: string;
}

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

function usage(message: string): PopefError {
  return new PopefError(ErrorCode.InvalidInput, message, { suggestion: 'see popef config --help' });
}

function pair(value: string, what: string): [string, string] {
  const at = value.indexOf('=');
  if (at <= 0) throw usage(`expected ${what}, got "${value}"`);
  return [value.slice(0, at), value.slice(at + 1)];
}

export function addConfigOptions(command: Command): Command {
  const positive = parseIntOption(1, 2 ** 31 - 1);
  return command
    .option('--executable <name>', 'the model to use when the files hold several')
    .option('--name <anchor=name>', 'Triton name for an anchor (repeatable); others get input_N / output_N', collect)
    .addOption(new Option('--device-iterations <n>', 'batches per step (default: the metadata\'s device iterations)').argParser(positive))
    .addOption(new Option('--gradient-accumulation <n>', 'gradient accumulation factor (default 1)').argParser(positive))
    .addOption(new Option('--max-batch-size <n>', 'override the computed max_batch_size').argParser(positive))
    .addOption(new Option('--batching <mode>', 'auto: first dimension is the batch; none: max_batch_size 0, full dims').choices(['auto', 'none']).default('auto'))
    .option('--parameter <key=value>', 'a parameters entry, e.g. synchronous_execution=1 or timeout_ns=500000 (repeatable)', collect)
    .option('--dynamic-batching', 'add dynamic_batching (off by default: no Graphcore example uses it)')
    .addOption(
      new Option('--preferred-batch-size <n>', 'a preferred batch size for dynamic batching (repeatable)').argParser((v: string, prev?: number[]) => [
        ...(prev ?? []),
        positive(v),
      ]),
    )
    .addOption(new Option('--max-queue-delay-us <n>', 'max_queue_delay_microseconds for dynamic batching').argParser(parseIntOption(0, Number.MAX_SAFE_INTEGER)))
    .option('--triton-version <version>', 'refuse fields newer than this Triton release (YY.MM, or latest)', DEFAULT_TRITON_VERSION);
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
  const set = await ModelSet.open(paths);
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
