import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ErrorCode, PopefError } from '../../errors.js';
import type { ParsedNameMap } from '../name-map.js';
import type { ModelConfig } from '../model-config.js';
import { DEFAULT_TRITON_VERSION } from '../triton-release.js';
import { backendLibrary, backendLibraryRules, backendSearchPath } from './backend-rules.js';
import { parseFailure } from './check-text.js';
import { checkConfig } from './config-rules.js';
import { checkModelFiles, filesNamedBy, type FileProbe } from './file-rules.js';
import { FindingSink, NO_POSITIONS, type SinkOptions } from './finding-sink.js';
import type { RawFinding } from './findings.js';
import {
  notCrossCheckedRule,
  popefBackendRule,
  servedByPoplar,
  type NotCrossChecked,
  versionFileRules,
  versionNameRules,
  versionPolicyRules,
} from './layout-rules.js';
import { readModelDirectory, type VersionDirectory } from './model-directory.js';
import { anchorsByName, nameMapRules } from './name-map-rules.js';
import { crossCheckVersion, type ReadForeignPopef } from './popef-cross-check.js';
import { childPath } from '../../io/child-path.js';

/**
 * One model directory of a repository, checked on its own: every rule but
 * the repository-level ones (the ensembles' steps), which need every
 * model's verdict. Models are independent, so validate may check them in
 * worker threads (model-pool.ts); what this returns crosses a thread as
 * plain data once its sink's state is taken.
 */

export interface ValidateOptions {
  /** Target Triton release for field checks (default 21.05; `latest` disables). */
  readonly tritonVersion?: string;
  /** Only these model directories. */
  readonly models?: readonly string[];
  /** Check that each model's backend library exists here. */
  readonly backendDirectory?: string;
  /** Report warnings as errors. */
  readonly strict?: boolean;
  /**
   * Findings of one rule listed per model (default 100; Infinity for all).
   * Past it they are counted in one closing finding: a config of half a
   * million mistyped inputs needs its first mistakes shown, not a report of
   * half a million lines.
   */
  readonly maxFindingsPerRule?: number;
  /**
   * A deployment gate: a served poplar version with no PopEF file
   * (layout/popef-missing) or with one this reader cannot cross-check
   * (popef/not-cross-checked) is an error, not a notice.
   */
  readonly requirePopef?: boolean;
  /** Check a PopEF description's SHA-256 against the file beside it, not only its size (reads the whole file). */
  readonly verify?: boolean;
  /**
   * Reads PopEF files that are not in the open layout (SDK-written exports),
   * for a caller that can: the CLI fills it with the Poplar SDK's reader
   * (through the bridge in src/run/bridge) where the SDK is installed. It
   * gets the absolute paths of one version's PopEF files, in the order they
   * form one model set, and returns their description (as `popef describe`
   * would write it), or undefined when it cannot read them here (no SDK);
   * then a description committed beside the file is used, else the version
   * gets popef/not-cross-checked. Left out, validate reads only the open
   * layout and never imports the run layer.
   */
  readonly readForeignPopef?: ReadForeignPopef;
  /**
   * Threads to check models on: this one and threads - 1 workers (default:
   * the machine's cores for a repository of 256 models or more on a machine
   * of 3 cores or more, else 1; model-pool.ts says why). A function is asked
   * with the number of models once the repository is listed, before any is
   * checked (the CLI's choice depends on it: src/cli/optimizer-deferral.ts).
   * The report is the same whatever the number.
   */
  readonly threads?: number | ((models: number) => number);
}

// Synchronous stats: see model-directory.ts for why.
function probeFile(path: string): FileProbe {
  try {
    const s = statSync(path);
    return s.isFile() ? { size: s.size } : { error: 'Is a directory' };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return { error: code === 'EACCES' ? 'Permission denied' : code === 'ENOTDIR' ? 'Not a directory' : 'No such file or directory' };
  }
}

/** Whether `path` is a regular file (following links). */
export function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** The options of a model's sink: here, and where a worker's result is taken back (model-pool.ts). */
export function sinkOptionsFor(model: string, options: Pick<ValidateOptions, 'strict' | 'maxFindingsPerRule'>): SinkOptions {
  return { model, strict: options.strict, limit: options.maxFindingsPerRule, configFile: `${model}/config.pbtxt` };
}

/** A model's findings so far, its sink still open for the repository-level rules (ensemble steps). */
export interface CheckedModel {
  readonly name: string;
  readonly sink: FindingSink;
  readonly config?: ModelConfig;
  readonly versions: readonly number[];
  readonly popefSkipped?: string;
}

/** Checks one model: reads its directory once, then applies every rule in the order Triton meets them. */
export async function checkModel(root: string, model: string, options: ValidateOptions): Promise<CheckedModel> {
  const sink = new FindingSink(sinkOptionsFor(model, options));
  const state: CheckState = { versions: [] };
  try {
    await checkModelInto(root, model, options, sink, state);
  } catch (error) {
    // A file or directory the OS will not let us read is this model's problem, not the run's: Triton fails that model and loads the others.
    if (!(error instanceof PopefError) || (error.code !== ErrorCode.Io && error.code !== ErrorCode.LimitExceeded)) throw error;
    const file = error.file === undefined ? model : relative(root, error.file) || model;
    sink.add({
      rule: 'layout/unreadable',
      message: `${error.message}; Triton cannot load model '${model}'`,
      file,
      hint: error.suggestion ?? 'check the permissions and the kind of the file',
      // The check stops here: what it had not read yet, no rule read.
      unusable: state.configRead ? ['name-map', 'popef'] : ['config', 'name-map', 'popef'],
    });
  }
  // The rules added later (the ensembles' steps) name no config path, as for a worker's result (SinkState):
  // the config's positions, a map per model, need not be held until every model is checked (issue 26).
  sink.setPositions(NO_POSITIONS);
  return {
    name: model,
    sink,
    ...checkedFields(state),
  };
}

/**
 * What a checked model carries beside its name and findings, without the
 * optional fields it lacks: the same in a worker's reply, back on the
 * calling thread, and in the report.
 */
export function checkedFields(
  c: Pick<CheckedModel, 'versions' | 'config' | 'popefSkipped'>,
): Pick<CheckedModel, 'versions' | 'config' | 'popefSkipped'> {
  return {
    versions: c.versions,
    ...(c.config === undefined ? {} : { config: c.config }),
    ...(c.popefSkipped === undefined ? {} : { popefSkipped: c.popefSkipped }),
  };
}

interface CheckState {
  /** Whether the config was read and its rules run (before that, a read that fails leaves everything unchecked). */
  configRead?: boolean;
  config?: ModelConfig;
  versions: number[];
  /** Why the popef/* rules did not run (the first reason met). */
  popefSkipped?: string;
}

/** The configs interrupted scaffolds moved aside at a repository root, kept while the root is unchanged. */
let asideAtRoot: { root: string; mtimeNs: bigint; names: readonly string[] } | undefined;

/**
 * Where an interrupted `popef scaffold --force` left the model's config
 * (temp-names.ts names it), if it did. The root is listed once while its
 * modification time stays the same, not once per model: a repository of
 * thousands of models without config.pbtxt would otherwise list its root
 * thousands of times.
 */
function movedAsideConfig(root: string, model: string): string | undefined {
  try {
    const { mtimeNs } = statSync(root, { bigint: true });
    if (asideAtRoot?.root !== root || asideAtRoot.mtimeNs !== mtimeNs) {
      const names = readdirSync(root).filter((n) => n.startsWith('.') && n.includes('.popef-staging-') && n.endsWith('.old-config.pbtxt'));
      asideAtRoot = { root, mtimeNs, names };
    }
    return asideAtRoot.names.find((n) => n.startsWith(`.${model}.popef-staging-`));
  } catch {
    return undefined;
  }
}

/**
 * Findings of one version's files, marked as the version's: a cause in it (no name map, a damaged PopEF) folds only
 * what this version gives. A function of the module, not a closure per version: unoptimized, the closure, the spread
 * and the map cost microseconds per model even when, as for most models, there is nothing to mark (issue 26).
 */
function inVersion(raws: readonly RawFinding[], version: string): readonly RawFinding[] {
  if (raws.length === 0) return raws;
  return raws.map((r) => ({ ...r, version }));
}

async function checkModelInto(root: string, model: string, options: ValidateOptions, sink: FindingSink, state: CheckState): Promise<void> {
  const dir = childPath(root, model);
  const configFile = `${model}/config.pbtxt`;
  // Triton names the file as it opens it: under the repository path it was given.
  const configPath = childPath(dir, 'config.pbtxt');
  const directory = await readModelDirectory(dir, model, configFile, root);
  state.configRead = true;
  for (let k = 0; k < directory.linkLoops.length; k++) {
    const loop = directory.linkLoops[k] as string;
    sink.add({
      rule: 'layout/link-loop',
      message: `${model}/${loop} is a symbolic link loop (ELOOP): Triton cannot open it as a version directory`,
      file: `${model}/${loop}`,
      hint: 'point the link at a real directory, or remove it',
    });
  }
  state.versions = directory.selected.map((v) => v.version);
  const read = directory.config;
  const config = read.kind === 'parsed' ? read.config : undefined;
  if (read.kind === 'parsed') sink.setPositions(read.positions);
  if (read.kind === 'missing') {
    const aside = movedAsideConfig(root, model);
    sink.add(
      aside === undefined
        ? {
            rule: 'layout/config-missing',
            message: `model '${model}' has no config.pbtxt: Triton auto-completes an empty config, which it cannot do for a Poplar model`,
            file: configFile,
            hint: 'add a config.pbtxt (popef config generates one)',
            unusable: ['config'],
          }
        : {
            rule: 'layout/config-missing',
            message: `model '${model}' has no config.pbtxt: an interrupted popef scaffold --force moved it to ${aside} in the repository`,
            file: configFile,
            hint: `run popef scaffold again for model ${model} (it finishes or undoes the interrupted one), or move ${aside} back to ${model}/config.pbtxt`,
            unusable: ['config'],
          },
    );
  } else if (read.kind === 'link-outside') {
    sink.add({
      rule: 'layout/link-outside',
      message: `${configFile} is a symbolic link that leaves the model repository; it was not read`,
      file: configFile,
      hint: 'copy the file into the repository instead of linking to it (popef pack refuses such links too)',
      unusable: ['config'],
    });
  } else if (read.kind === 'unparsable') {
    const failure = parseFailure(read.error, configPath);
    sink.add({ ...failure, file: configFile });
  }
  let normalized: ModelConfig | undefined;
  if (read.kind !== 'unparsable' && read.kind !== 'link-outside') {
    const tritonVersion = options.tritonVersion ?? DEFAULT_TRITON_VERSION;
    const first = directory.firstSubdirectory;
    // Two literals, not one with a conditional spread: before V8 optimises this, a spread after fields costs a
    // microsecond or two, and this runs for every model (issue 26).
    const checked = checkConfig(
      config ?? {},
      first === undefined ? { name: model, tritonVersion, configPath } : { name: model, tritonVersion, configPath, firstSubdirectory: first },
    );
    sink.addAll(checked.findings);
    normalized = checked.normalized;
    state.config = normalized;
    const probes = new Map<string, FileProbe>();
    const named = filesNamedBy(normalized);
    for (let k = 0; k < named.length; k++) {
      const file = named[k] as string;
      probes.set(file, probeFile(childPath(dir, file)));
    }
    sink.addAll(checkModelFiles(normalized, dir, probes));
  }
  sink.addAll(versionNameRules(directory));
  sink.addAll(versionPolicyRules(directory, config));
  const requirePopef = options.requirePopef === true;
  /** Why the PopEF cross-check was not done, per version. */
  const notDone: NotCrossChecked[] = [];
  // Indexed, as the loops above and below: for-of makes an iterator and a result per step before V8 optimises this (issue 26).
  for (let k = 0; k < directory.selected.length; k++) {
    const v = directory.selected[k] as VersionDirectory;
    if (v.listError !== undefined) throw v.listError;
    const versionPath = `${model}/${v.dir}`;
    sink.addAll(inVersion(versionFileRules(model, v, config, { requirePopef }), versionPath));
    if (!servedByPoplar(v, config)) continue;
    if (v.nameMapError !== undefined) throw v.nameMapError;
    let nameMap: ParsedNameMap | undefined;
    let nameMapUsable = true;
    if (v.nameMapLinksOutside === true) {
      sink.add({
        rule: 'layout/link-outside',
        message: `${versionPath}/name_map.json is a symbolic link that leaves the model repository; it was not read`,
        file: `${versionPath}/name_map.json`,
        hint: 'copy the file into the repository instead of linking to it (popef pack refuses such links too)',
        unusable: ['name-map'],
        version: versionPath,
      });
      nameMapUsable = false;
    } else if (v.nameMapText !== undefined) {
      const checked = nameMapRules(v.nameMapText, `${versionPath}/name_map.json`, model, config);
      sink.addAll(inVersion(checked.findings, versionPath));
      nameMap = checked.map;
      nameMapUsable = nameMap !== undefined && nameMap.schemaErrors.length === 0;
    }
    const outcome = await crossCheckVersion({
      model,
      versionPath,
      versionDir: childPath(dir, v.dir),
      version: v,
      // Config names reach anchors through the map; without a usable map that link is unknown.
      config: config !== undefined && nameMapUsable ? config : undefined,
      unusable: config === undefined ? 'config.pbtxt is not usable' : `${versionPath}/name_map.json is not usable`,
      anchorOf: anchorsByName(nameMap),
      wanted: sink.wanted(),
      verify: options.verify === true,
      ...(options.readForeignPopef === undefined ? {} : { readForeignPopef: options.readForeignPopef }),
    });
    sink.addAll(inVersion(outcome.findings, versionPath));
    // With --require-popef, layout/popef-missing has said there is no PopEF already.
    if (outcome.notDone !== undefined && !(requirePopef && outcome.notDone.kind === 'no-popef')) notDone.push(outcome.notDone);
    if (outcome.skipped !== undefined) state.popefSkipped ??= outcome.skipped;
  }
  if (notDone.length > 0) sink.add(notCrossCheckedRule(model, notDone, requirePopef));
  sink.addAll(popefBackendRule(directory, config));
  if (config !== undefined && options.backendDirectory !== undefined) {
    const effective = normalized ?? config;
    const lib = backendLibrary(effective);
    if (lib !== undefined) {
      const searched = backendSearchPath(
        dir,
        directory.selected.map((v) => v.dir),
        options.backendDirectory,
        lib.backend,
      );
      let found: string | undefined;
      for (const d of searched) {
        if (isFile(join(d, lib.library))) {
          found = join(d, lib.library);
          break;
        }
      }
      sink.addAll(
        backendLibraryRules(effective, { model, backendDirectory: options.backendDirectory, searched, ...(found === undefined ? {} : { found }) }),
      );
    }
  }
}
