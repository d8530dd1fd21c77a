import { ErrorCode, PopefError } from '../errors.js';
import type { Metadata } from '../schema/model.js';
import { configFromPopef, type ConfigOptions, type GeneratedConfig } from '../triton/config-from-popef.js';
import { renderNameMap } from '../triton/name-map.js';
import { printPbtxt } from '../triton/pbtxt-printer.js';

/**
 * The page's config panel: the options of `popef config` as the form holds
 * them (text, as typed), turned into the library's ConfigOptions and
 * generated with the same three calls the CLI makes, so the two files are
 * byte for byte what `popef config` / `popef scaffold` write.
 */
export interface ConfigFormState {
  readonly modelName: string;
  /** Anchor name -> Triton name, for the names the user typed. */
  readonly names: readonly (readonly [string, string])[];
  readonly maxBatchSize: string;
  readonly deviceIterations: string;
  readonly batching: 'auto' | 'none';
  readonly dynamicBatching: boolean;
  /** Comma-separated, as --preferred-batch-size takes them one by one. */
  readonly preferredBatchSizes: string;
  readonly maxQueueDelayUs: string;
  /** KEY=VALUE, comma-separated. */
  readonly parameters: string;
  readonly tritonVersion: string;
}

export interface ConfigFiles extends GeneratedConfig {
  readonly pbtxt: string;
  readonly nameMapText: string;
}

function bad(message: string): PopefError {
  return new PopefError(ErrorCode.InvalidInput, message, { suggestion: 'correct the field; the files update as you type' });
}

function integer(text: string, what: string): number | undefined {
  if (text === '') return undefined;
  if (!/^\d+$/.test(text)) throw bad(`${what} must be a whole number, not "${text}"`);
  return Number(text);
}

function list<T>(text: string, parse: (item: string) => T): T[] {
  return text === '' ? [] : text.split(',').map((item) => parse(item.trim()));
}

export function configFiles(metadata: Metadata, storedTensorNames: ReadonlySet<string>, form: ConfigFormState): ConfigFiles {
  const names = new Map<string, string>();
  for (const [anchor, name] of form.names) names.set(anchor, name);
  const parameters = list(form.parameters, (item) => {
    const at = item.indexOf('=');
    if (at <= 0) throw bad(`a parameter is KEY=VALUE, not "${item}"`);
    return [item.slice(0, at), item.slice(at + 1)] as const;
  });
  const preferred = list(form.preferredBatchSizes, (item) => integer(item, 'a preferred batch size') ?? 0);
  const delay = integer(form.maxQueueDelayUs, 'the queue delay');
  if (!form.dynamicBatching && (preferred.length > 0 || delay !== undefined))
    throw bad('preferred batch sizes and the queue delay need dynamic batching');
  const options: ConfigOptions = {
    ...(form.modelName === '' ? {} : { modelName: form.modelName }),
    names,
    deviceIterations: integer(form.deviceIterations, 'device iterations'),
    maxBatchSize: integer(form.maxBatchSize, 'max batch size'),
    batching: form.batching,
    parameters,
    dynamicBatching: form.dynamicBatching
      ? { ...(preferred.length > 0 ? { preferredBatchSizes: preferred } : {}), ...(delay === undefined ? {} : { maxQueueDelayMicroseconds: delay }) }
      : undefined,
  };
  const generated = configFromPopef(metadata, storedTensorNames, options);
  return {
    ...generated,
    pbtxt: printPbtxt(generated.config, form.tritonVersion === '' ? {} : { tritonVersion: form.tritonVersion }),
    nameMapText: renderNameMap(generated.nameMap),
  };
}
