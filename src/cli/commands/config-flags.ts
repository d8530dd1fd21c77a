/** The options `popef config` and `popef scaffold` share: commander only, so registering the commands stays cheap. */
import { Option, type Command } from 'commander';
import { DEFAULT_TRITON_VERSION } from '../../triton/triton-release.js';
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

export function addConfigOptions(command: Command): Command {
  const positive = parseIntOption(1, 2 ** 31 - 1);
  return command
    .option('--executable <name>', 'the model to use when the files hold several')
    .option('--name <anchor=name>', 'Triton name for an anchor (repeatable); others get input_N / output_N', collect)
    .addOption(new Option('--device-iterations <n>', "batches per step (default: the metadata's device iterations)").argParser(positive))
    .addOption(new Option('--gradient-accumulation <n>', 'gradient accumulation factor (default: 1)').argParser(positive))
    .addOption(new Option('--max-batch-size <n>', 'override the computed max_batch_size').argParser(positive))
    .addOption(
      new Option('--batching <mode>', 'auto: first dimension is the batch; none: max_batch_size 0, full dims')
        .choices(['auto', 'none'])
        .default('auto'),
    )
    .option('--parameter <key=value>', 'a parameters entry, e.g. synchronous_execution=1 or timeout_ns=500000 (repeatable)', collect)
    .option('--dynamic-batching', 'add dynamic_batching (off by default: no Graphcore example uses it)')
    .addOption(
      new Option('--preferred-batch-size <n>', 'a preferred batch size for dynamic batching (repeatable)').argParser((v: string, prev?: number[]) => [
        ...(prev ?? []),
        positive(v),
      ]),
    )
    .addOption(
      new Option('--max-queue-delay-us <n>', 'max_queue_delay_microseconds for dynamic batching').argParser(
        parseIntOption(0, Number.MAX_SAFE_INTEGER),
      ),
    )
    .option('--triton-version <version>', 'refuse fields newer than this Triton release (YY.MM, or latest)', DEFAULT_TRITON_VERSION);
}
