import { readdir, stat } from 'node:fs/promises';
import { basename, dirname, join, relative } from 'node:path';
import { ErrorCode, PopefError, ioError } from '../../errors.js';
import type { ParsedNameMap } from '../name-map.js';
import type { ModelConfig } from '../model-config.js';
import { DEFAULT_TRITON_VERSION } from '../triton-release.js';
import { MAX_FINDINGS_PER_RULE } from './finding-limit.js';
import { backendLibrary, backendLibraryRules, backendSearchPath } from './backend-rules.js';
import { parseFailure } from './check-text.js';
import { checkConfig } from './config-rules.js';
import { validateEnsembleConfig } from './ensemble-rules.js';
import { checkModelFiles, filesNamedBy, type FileProbe } from './file-rules.js';
import { FindingSink } from './finding-sink.js';
import { RULES, type Finding, type RawFinding, type RuleId } from './findings.js';
import {
  notCrossCheckedRule,
  popefBackendRule,
  servedByPoplar,
  type NotCrossChecked,
  versionFileRules,
  versionNameRules,
  versionPolicyRules,
} from './layout-rules.js';
import { isDirectory, isLinkLoop, listDir, readModelDirectory } from './model-directory.js';
import { anchorsByName, nameMapRules } from './name-map-rules.js';
import { crossCheckVersion, type ReadForeignPopef } from './popef-cross-check.js';

/**
 * `popef validate` without the CLI: walks a Triton model repository the way
 * Triton polls it and returns findings per model. Reads config.pbtxt,
 * name_map.json and the PopEF files' headers and metadata, nothing more.
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
}

export { MAX_FINDINGS_PER_RULE };

/** The findings of one model directory. */
export interface ModelReport {
  readonly name: string;
  readonly findings: readonly Finding[];
  /** The config as Triton would see it after autofill and normalisation (absent when it does not parse). */
  readonly config?: ModelConfig;
  /** The versions the version policy selects, highest first (what Triton loads). */
  readonly versions: readonly number[];
  /** Why the popef/* rules that read the PopEF did not run, when they did not (JUnit shows them skipped). */
  readonly popefSkipped?: string;
}

/** What validateRepository found in one repository. */
export interface RepositoryReport {
  readonly repository: string;
  readonly models: readonly ModelReport[];
  /** Findings about the repository itself (hidden directories). */
  readonly findings: readonly Finding[];
}

async function probeFile(path: string): Promise<FileProbe> {
  try {
    const s = await stat(path);
    return s.isFile() ? { size: s.size } : { error: 'Is a directory' };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return { error: code === 'EACCES' ? 'Permission denied' : code === 'ENOTDIR' ? 'Not a directory' : 'No such file or directory' };
  }
}

async function isFile(path: string): Promise<boolean> {
  return stat(path).then(
    (st) => st.isFile(),
    () => false,
  );
}

/** A model's findings so far, its sink still open for the repository-level rules (ensemble steps). */
interface CheckedModel {
  readonly name: string;
  readonly sink: FindingSink;
  readonly config?: ModelConfig;
  readonly versions: readonly number[];
  readonly popefSkipped?: string;
}

/** Checks one model: reads its directory once, then applies every rule in the order Triton meets them. */
async function checkModel(root: string, model: string, options: ValidateOptions): Promise<CheckedModel> {
  const configFile = `${model}/config.pbtxt`;
  const sink = new FindingSink({ model, strict: options.strict, limit: options.maxFindingsPerRule, configFile });
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
    });
  }
  return {
    name: model,
    sink,
    ...(state.config === undefined ? {} : { config: state.config }),
    versions: state.versions,
    ...(state.popefSkipped === undefined ? {} : { popefSkipped: state.popefSkipped }),
  };
}

interface CheckState {
  config?: ModelConfig;
  versions: number[];
  /** Why the popef/* rules did not run (the first reason met). */
  popefSkipped?: string;
}

/** Where an interrupted `popef scaffold --force` left the model's config (temp-names.ts names it), if it did. */
async function movedAsideConfig(root: string, model: string): Promise<string | undefined> {
  const names = await readdir(root).catch(() => [] as string[]);
  return names.find((n) => n.startsWith(`.${model}.popef-staging-`) && n.endsWith('.old-config.pbtxt'));
}

async function checkModelInto(root: string, model: string, options: ValidateOptions, sink: FindingSink, state: CheckState): Promise<void> {
  const dir = join(root, model);
  const configFile = `${model}/config.pbtxt`;
  // Triton names the file as it opens it: under the repository path it was given.
  const configPath = join(dir, 'config.pbtxt');
  const directory = await readModelDirectory(dir, model, configFile, root);
  for (const loop of directory.linkLoops) {
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
    const aside = await movedAsideConfig(root, model);
    sink.add(
      aside === undefined
        ? {
            rule: 'layout/config-missing',
            message: `model '${model}' has no config.pbtxt: Triton auto-completes an empty config, which it cannot do for a Poplar model`,
            file: configFile,
            hint: 'add a config.pbtxt (popef config generates one)',
          }
        : {
            rule: 'layout/config-missing',
            message: `model '${model}' has no config.pbtxt: an interrupted popef scaffold --force moved it to ${aside} in the repository`,
            file: configFile,
            hint: `run popef scaffold again for model ${model} (it finishes or undoes the interrupted one), or move ${aside} back to ${model}/config.pbtxt`,
          },
    );
  } else if (read.kind === 'link-outside') {
    sink.add({
      rule: 'layout/link-outside',
      message: `${configFile} is a symbolic link that leaves the model repository; it was not read`,
      file: configFile,
      hint: 'copy the file into the repository instead of linking to it (popef pack refuses such links too)',
    });
  } else if (read.kind === 'unparsable') {
    const failure = parseFailure(read.error, configPath);
    sink.add({ ...failure, file: configFile });
  }
  let normalized: ModelConfig | undefined;
  if (read.kind !== 'unparsable' && read.kind !== 'link-outside') {
    const checked = checkConfig(config ?? {}, {
      name: model,
      tritonVersion: options.tritonVersion ?? DEFAULT_TRITON_VERSION,
      configPath,
      ...(directory.firstSubdirectory === undefined ? {} : { firstSubdirectory: [...directory.firstSubdirectory] }),
    });
    sink.addAll(checked.findings);
    normalized = checked.normalized;
    state.config = normalized;
    const probes = new Map<string, FileProbe>();
    for (const file of filesNamedBy(normalized)) probes.set(file, await probeFile(join(dir, file)));
    sink.addAll(checkModelFiles(normalized, dir, probes));
  }
  sink.addAll(versionNameRules(directory));
  sink.addAll(versionPolicyRules(directory, config));
  const requirePopef = options.requirePopef === true;
  /** Why the PopEF cross-check was not done, per version. */
  const notDone: NotCrossChecked[] = [];
  for (const v of directory.selected) {
    if (v.listError !== undefined) throw v.listError;
    sink.addAll(versionFileRules(model, v, config, { requirePopef }));
    if (!servedByPoplar(v, config)) continue;
    if (v.nameMapError !== undefined) throw v.nameMapError;
    const versionPath = `${model}/${v.dir}`;
    let nameMap: ParsedNameMap | undefined;
    let nameMapUsable = true;
    if (v.nameMapLinksOutside === true) {
      sink.add({
        rule: 'layout/link-outside',
        message: `${versionPath}/name_map.json is a symbolic link that leaves the model repository; it was not read`,
        file: `${versionPath}/name_map.json`,
        hint: 'copy the file into the repository instead of linking to it (popef pack refuses such links too)',
      });
      nameMapUsable = false;
    } else if (v.nameMapText !== undefined) {
      const checked = nameMapRules(v.nameMapText, `${versionPath}/name_map.json`, model, config);
      sink.addAll(checked.findings);
      nameMap = checked.map;
      nameMapUsable = nameMap !== undefined && nameMap.schemaErrors.length === 0;
    }
    const outcome = await crossCheckVersion({
      model,
      versionPath,
      versionDir: join(dir, v.dir),
      version: v,
      // Config names reach anchors through the map; without a usable map that link is unknown.
      config: config !== undefined && nameMapUsable ? config : undefined,
      unusable: config === undefined ? 'config.pbtxt is not usable' : `${versionPath}/name_map.json is not usable`,
      anchorOf: anchorsByName(nameMap),
      wanted: sink.wanted(),
      verify: options.verify === true,
      ...(options.readForeignPopef === undefined ? {} : { readForeignPopef: options.readForeignPopef }),
    });
    sink.addAll(outcome.findings);
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
        if (await isFile(join(d, lib.library))) {
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

/** Rules Triton applies while polling the repository, before a model enters the dependency graph. */
export const POLL_RULES: ReadonlySet<RuleId> = new Set<RuleId>([
  'config/parse',
  'config/newer-than-target',
  'config/name-mismatch',
  'config/no-backend',
  'config/unknown-platform',
  'config/platform-backend-pair',
  'config/ensemble',
  'config/max-batch-size',
  'config/preferred-batch-size',
  'config/priority-levels',
  'config/response-cache',
  'config/sequence-batching',
]);

/**
 * Mirrors the dependency check of ModelRepositoryManager's dependency graph:
 * an ensemble loads only when every model its steps name exists and loads.
 */
function ensembleStepRules(model: CheckedModel, repositoryModels: ReadonlySet<string>, checked: ReadonlyMap<string, CheckedModel>): RawFinding[] {
  const config = model.config;
  if (config?.platform !== 'ensemble' || config.ensemble_scheduling === undefined) return [];
  const name = config.name ?? model.name;
  const steps = [...new Set((config.ensemble_scheduling.step ?? []).map((s) => s.model_name ?? '').filter((s) => s !== ''))].sort();
  // A step refused at poll time is not in the dependency graph at all: Triton calls it not available.
  const stepErrors = (step: string): readonly Finding[] =>
    checked
      .get(step)
      ?.sink.listedFindings()
      .filter((f) => f.severity === 'error' && RULES[f.rule].mirrors !== null) ?? [];
  const missing = steps.filter((s) => !repositoryModels.has(s) || stepErrors(s).some((f) => POLL_RULES.has(f.rule)));
  if (missing.length > 0) {
    return [
      {
        rule: 'config/ensemble-step-missing',
        message: `ensemble ${name} contains models that are not available or ambiguous: ${missing.join(', ')}`,
        hint: 'add the step models to the repository, or fix model_name',
      },
    ];
  }
  for (const step of steps) {
    const failed = stepErrors(step)[0];
    if (failed !== undefined) {
      return [
        {
          rule: 'config/ensemble-step-missing',
          message: `ensemble '${name}' depends on '${step}' which has no loaded version. Model '${step}' loading failed with error: ${failed.message}`,
          hint: `fix model ${step} first`,
        },
      ];
    }
  }
  // With every step loaded, Triton checks the ensemble's tensors against the steps' configs.
  const stepConfigs = new Map<string, ModelConfig>();
  for (const step of steps) {
    const stepConfig = checked.get(step)?.config;
    if (stepConfig !== undefined) stepConfigs.set(step, stepConfig);
  }
  const tensors = validateEnsembleConfig(config, stepConfigs);
  return tensors === undefined ? [] : [{ rule: tensors.rule, message: tensors.message, hint: tensors.hint ?? '' }];
}

/** Validates one repository. Throws only when the repository itself cannot be read (exit 2). */
export async function validateRepository(root: string, options: ValidateOptions = {}): Promise<RepositoryReport> {
  const info = await stat(root).catch((error: unknown) => {
    throw ioError(error, root, 'open the model repository');
  });
  if (!info.isDirectory()) {
    throw new PopefError(ErrorCode.Io, 'not a directory', {
      file: root,
      suggestion: 'give the model repository directory (the one passed to tritonserver --model-repository)',
    });
  }
  const repositorySink = new FindingSink({ strict: options.strict, limit: options.maxFindingsPerRule });
  // `popef validate models/mnist`: a model directory given where its repository belongs.
  if (await isFile(join(root, 'config.pbtxt'))) {
    const parent = basename(dirname(root)) || dirname(root);
    repositorySink.add({
      rule: 'layout/model-directory',
      message: `${basename(root)} holds config.pbtxt: it is a model directory, not a model repository, so its version directories are read as models`,
      file: 'config.pbtxt',
      hint: `give the repository that holds it: popef validate ${parent} (the directory passed to tritonserver --model-repository)`,
    });
  }
  const entries = (await listDir(root)).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const wanted = options.models === undefined ? undefined : new Set(options.models);
  const modelNames: string[] = [];
  const modelDirectories = new Set<string>();
  const hidden = new Set<string>();
  for (const entry of entries) {
    if (await isLinkLoop(join(root, entry.name), entry)) {
      repositorySink.add({
        rule: 'layout/link-loop',
        message: `${entry.name} is a symbolic link loop (ELOOP): Triton cannot open it as a model directory`,
        file: entry.name,
        hint: 'point the link at a real directory, or remove it',
      });
      continue;
    }
    if (!(await isDirectory(join(root, entry.name), entry))) continue;
    if (!entry.name.startsWith('.')) modelDirectories.add(entry.name);
    if (wanted !== undefined && !wanted.has(entry.name)) continue;
    if (entry.name.startsWith('.')) {
      hidden.add(entry.name);
      repositorySink.add({
        rule: 'layout/hidden-directory',
        message: `hidden directory '${entry.name}' at the repository root is loaded by Triton as a model (and fails)`,
        file: entry.name,
        hint: 'move it out of the model repository',
      });
      continue;
    }
    modelNames.push(entry.name);
  }
  // Models are independent and the work is mostly waiting on the disk: a few at a time, reported in order.
  const CONCURRENCY = 8;
  const checked: CheckedModel[] = new Array<CheckedModel>(modelNames.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < modelNames.length) {
      const index = next++;
      checked[index] = await checkModel(root, modelNames[index] ?? '', options);
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, modelNames.length) }, worker));
  const byName = new Map(checked.map((c) => [c.name, c]));
  // Every model's own findings are in before the ensembles look at their steps.
  const ensembleFindings = checked.map((c) => ensembleStepRules(c, modelDirectories, byName));
  const models: ModelReport[] = checked.map((c, i) => {
    c.sink.addAll(ensembleFindings[i] ?? []);
    return {
      name: c.name,
      findings: c.sink.close(),
      versions: c.versions,
      ...(c.config === undefined ? {} : { config: c.config }),
      ...(c.popefSkipped === undefined ? {} : { popefSkipped: c.popefSkipped }),
    };
  });
  if (wanted !== undefined) {
    for (const name of wanted) {
      if (!models.some((m) => m.name === name) && !hidden.has(name)) {
        throw new PopefError(ErrorCode.InvalidInput, `no model directory named "${name}"`, {
          file: root,
          suggestion: 'check --model against the directories of the repository',
        });
      }
    }
  }
  return { repository: root, models, findings: repositorySink.close() };
}

/** Counts of errors, warnings and notices over reports, and of the models whose PopEF cross-check was not done. */
export function summarizeFindings(reports: readonly RepositoryReport[]): {
  errors: number;
  warnings: number;
  notices: number;
  models: number;
  notCrossChecked: number;
} {
  const all = reports.flatMap((r) => [...r.findings, ...r.models.flatMap((m) => m.findings)]);
  return {
    errors: all.filter((f) => f.severity === 'error').length,
    warnings: all.filter((f) => f.severity === 'warning').length,
    notices: all.filter((f) => f.severity === 'info').length,
    models: reports.reduce((n, r) => n + r.models.length, 0),
    notCrossChecked: reports.reduce((n, r) => n + r.models.filter((m) => m.findings.some((f) => f.rule === 'popef/not-cross-checked')).length, 0),
  };
}
