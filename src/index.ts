/**
 * popef-toolkit's library entry. Everything exported here is pure: nothing
 * below this boundary prints, exits, or reads process state.
 */
export { ErrorCode, PluginError, PopefError, isPopefError } from './errors.js';
export type { ErrorLocation, PluginErrorOptions, PluginFailure, PopefErrorOptions } from './errors.js';

export type { ByteSource } from './io/byte-source.js';
export { FileSource } from './io/file-source.js';
export { MemorySource } from './io/memory-source.js';
export { BlobSource } from './io/blob-source.js';

export { BlobType, Codec, LAYOUT_VERSION, Limits, type BlobTypeName } from './format/constants.js';
export type {
  Blob,
  BlobFrame,
  BlobKind,
  ExecutableBlob,
  FeedDataBlob,
  MetadataBlob,
  OpaqueBlob,
  ReadWarning,
  TensorDataBlob,
  UnknownBlob,
} from './format/blob.js';
export { PopefFile, type OpenOptions, type ProgressCallback } from './format/reader.js';
export { ModelSet, type Model } from './format/model-set.js';
export { checkModelContents, type ModelContents, type Where } from './format/model-rules.js';
export { PopefWriter, type ExecutableOptions, type PayloadSource, type RawBlob, type WriterOptions } from './format/writer.js';

export { DATA_TYPE_INFO, dataTypeOfCode, isFloat, type DataTypeFacts, type DataTypeInfo, type NumberKind } from './schema/data-types.js';
export { DATA_TYPES, TENSOR_TYPES, elementBytes, emptyMetadata, isDataType, isTensorType, sameTensorInfo, sizeInBytes } from './schema/model.js';
export type { Anchor, DataType, Metadata, Option, ProgramFlow, ProgramName, TensorInfo, TensorType } from './schema/model.js';

export { MANIFEST_FORMAT, MANIFEST_VERSION, type Manifest, type ManifestBlob } from './manifest/manifest.js';
export { checkManifestModel, packManifest, readManifest, type PackOptions } from './manifest/pack.js';
export { unpackFile, type UnpackOptions, type UnpackResult } from './manifest/unpack.js';

export type {
  Message,
  ModelConfig,
  ModelInput,
  ModelOutput,
  ModelInstanceGroup,
  ModelDynamicBatching,
  ModelParameter,
  MapEntry,
  Int64,
  TritonDataType,
} from './triton/model-config.js';
export { ENUMS as TRITON_ENUMS, MESSAGES as TRITON_MESSAGES, type FieldSpec, type MessageName } from './triton/schema.js';
export { parsePbtxt, type ParseOptions, type ParseResult } from './triton/pbtxt-parser.js';
export type { SourcePos } from './triton/pbtxt-lexer.js';
export { DEFAULT_TRITON_VERSION, canonicalize, printPbtxt, type PrintOptions } from './triton/pbtxt-printer.js';
export { POPEF_TO_TRITON, configFromPopef, type ConfigOptions, type GeneratedConfig } from './triton/config-from-popef.js';
export { parseNameMap, renderNameMap, type NameMapEntry, type ParsedNameMap } from './triton/name-map.js';
export {
  ConfigMismatchError,
  applyScaffold,
  checkModelName,
  planScaffold,
  type ScaffoldFile,
  type ScaffoldNote,
  type ScaffoldOptions,
  type ScaffoldPlan,
} from './triton/scaffold.js';
export { configDifferences, type ConfigDifference } from './triton/config-match.js';
export { anchorRole, userAnchors, type AnchorRole } from './inspect/anchor-roles.js';
export {
  buildReport,
  type AnchorReport,
  type BlobReport,
  type DumpReport,
  type FeedReport,
  type FileReport,
  type MetadataReport,
  type ModelReport as DumpModelReport,
  type OpaqueReport,
  type Size,
  type TensorReport,
  type VerifyReport,
} from './inspect/report.js';
export { describeModelSet, parseDescription, descriptionPathOf, type DescribedFile, type PopefDescription } from './inspect/description.js';

export type { Availability, ExecutionPlugin, ModelRequest, ModelTensors, OpenedModel, RunOptions, Tensor, TensorSpec } from './run/plugin-api.js';
export { ChildProcessPlugin, type ChildPluginOptions } from './run/child-plugin.js';
export { ipuBridgePath, ipuPlugin, loadPlugin, type PluginContext } from './run/load-plugin.js';
export { PROTOCOL as PLUGIN_PROTOCOL } from './run/protocol.js';
export { compareValues, type Comparison, type Tolerance } from './run/compare.js';
export { latency, summarize, topK, type Latency, type TensorSummary } from './run/stats.js';
export { fromNumbers, toNumbers } from './run/tensor.js';
export { loadInput, randomTensor, type ImageOptions, type RandomOptions } from './run/tensor-io/inputs.js';
export { readNpy, writeNpy } from './run/tensor-io/npy.js';
export {
  validateRepository,
  summarizeFindings,
  type ModelReport,
  type RepositoryReport,
  type ValidateOptions,
} from './triton/repository/validate.js';
export type { ReadForeignPopef } from './triton/repository/popef-cross-check.js';
export { readModelDirectory, type ModelDirectoryRead, type VersionDirectory } from './triton/repository/model-directory.js';
export { checkConfigText, type ConfigTextCheck } from './triton/repository/check-text.js';
export { RULES, type Finding, type RuleId, type RuleInput, type Severity } from './triton/repository/findings.js';
