import type { Dirent } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { ErrorCode, PopefError, ioError, isNotFound } from '../../errors.js';
import { FILE_LIMITS, readRegularFile, readRegularText } from '../../io/local-file.js';
import { ModelSet } from '../../format/model-set.js';
import { parseNameMap, type ParsedNameMap } from '../name-map.js';
import type { SourcePos } from '../pbtxt-lexer.js';
import { parsePbtxt } from '../pbtxt-parser.js';
import type { ModelConfig } from '../model-config.js';
import { DEFAULT_TRITON_VERSION } from '../triton-release.js';
import { MAX_FINDINGS_PER_RULE } from './finding-limit.js';
import { nearestPosition, parseFailure } from './check-text.js';
import { checkConfig, escapes } from './config-rules.js';
import { validateEnsembleConfig } from './ensemble-rules.js';
import { checkModelFiles, filesNamedBy, type FileProbe } from './file-rules.js';
import type { DirEntry } from './normalize.js';
import { RULES, type Finding, type RawFinding, type RuleId, type Severity } from './findings.js';
import { checkAgainstPopef } from './popef-rules.js';

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
}

export { MAX_FINDINGS_PER_RULE };

/** The findings of one model directory. */
export interface ModelReport {
  readonly name: string;
  readonly findings: readonly Finding[];
  /** The config as Triton would see it after autofill and normalisation (absent when it does not parse). */
  readonly config?: ModelConfig;
}

/** What validateRepository found in one repository. */
export interface RepositoryReport {
  readonly repository: string;
  readonly models: readonly ModelReport[];
  /** Findings about the repository itself (hidden directories). */
  readonly findings: readonly Finding[];
}

/** Directories in a model directory that are not versions (Triton skips them silently). */
const NOT_VERSIONS = new Set(['warmup', 'initial_state', 'configs']);

interface VersionDir {
  readonly dir: string;
  readonly version: number;
}

async function listDir(path: string): Promise<Dirent[]> {
  try {
    return await readdir(path, { withFileTypes: true });
  } catch (error) {
    throw ioError(error, path, 'list the directory');
  }
}

async function isDirectory(path: string, entry: Dirent): Promise<boolean> {
  if (entry.isDirectory()) return true;
  if (!entry.isSymbolicLink()) return false;
  return stat(path).then(
    (s) => s.isDirectory(),
    () => false,
  );
}

/** Triton reads version names with std::stoll: a numeric prefix counts. */
function stollPrefix(name: string): number | undefined {
  const m = /^\s*([+-]?\d+)/.exec(name);
  return m === null ? undefined : Number(m[1]);
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


class ModelChecker {
  private readonly findings: Finding[] = [];
  /** The config after Triton's autofill and normalisation, once checked. */
  private normalized: ModelConfig | undefined;
  /** Directory listings, read once: autofill and the version checks both list the first version directory. */
  private readonly listings = new Map<string, Promise<Dirent[]>>();

  private list(path: string): Promise<Dirent[]> {
    let listing = this.listings.get(path);
    if (listing === undefined) {
      listing = listDir(path);
      this.listings.set(path, listing);
    }
    return listing;
  }

  constructor(
    private readonly root: string,
    private readonly model: string,
    private readonly options: ValidateOptions,
  ) {}

  /** Findings per rule, listed or not; and the severity of the first, for the closing count. */
  private readonly perRule = new Map<RuleId, { count: number; severity: Severity; file?: string }>();

  /** Findings of one rule listed for this model. */
  private get limit(): number {
    return this.options.maxFindingsPerRule ?? MAX_FINDINGS_PER_RULE;
  }

  /**
   * For a rule function that returns its findings at the end: whether its
   * next finding of `rule` will be listed, counting the ones it made before.
   */
  private wanter(): (rule: RuleId) => boolean {
    const made = new Map<RuleId, number>();
    return (rule) => {
      const n = (made.get(rule) ?? 0) + 1;
      made.set(rule, n);
      return (this.perRule.get(rule)?.count ?? 0) + n <= this.limit;
    };
  }

  private add(rule: RuleId, message: string, where: { file?: string; at?: SourcePos } = {}, hint?: string, severity?: Severity): void {
    const shown: Severity = this.options.strict === true ? 'error' : (severity ?? RULES[rule].severity);
    const seen = this.perRule.get(rule) ?? { count: 0, severity: shown, ...(where.file === undefined ? {} : { file: where.file }) };
    seen.count += 1;
    this.perRule.set(rule, seen);
    if (seen.count > this.limit) return;
    this.findings.push({
      rule,
      severity: shown,
      message,
      model: this.model,
      ...(where.file === undefined ? {} : { file: where.file }),
      ...(where.at === undefined ? {} : { line: where.at.line, column: where.at.column }),
      ...(hint === undefined ? {} : { hint }),
    });
  }

  private addRaw(raw: readonly RawFinding[], file: string, positions: ReadonlyMap<string, SourcePos>): void {
    for (const f of raw) {
      // Past the limit only the count matters: no position to look for.
      if ((this.perRule.get(f.rule)?.count ?? 0) >= this.limit) {
        this.add(f.rule, f.message, { file }, f.hint, f.severity);
        continue;
      }
      this.add(f.rule, f.message, { file, at: nearestPosition(positions, f.path) }, f.hint, f.severity);
    }
  }

  async run(): Promise<ModelReport> {
    try {
      await this.check();
    } catch (error) {
      // A file or directory the OS will not let us read is this model's problem, not the run's: Triton fails that model and loads the others.
      if (!(error instanceof PopefError) || (error.code !== ErrorCode.Io && error.code !== ErrorCode.LimitExceeded)) throw error;
      const file = error.file === undefined ? this.model : relative(this.root, error.file) || this.model;
      this.add('layout/unreadable', `${error.message}; Triton cannot load model '${this.model}'`, { file }, error.suggestion ?? 'check the permissions and the kind of the file');
    }
    const limit = this.limit;
    for (const [rule, seen] of this.perRule) {
      if (seen.count <= limit) continue;
      this.findings.push({
        rule,
        severity: seen.severity,
        message: `${seen.count - limit} more finding(s) of this rule in model '${this.model}' are not listed (${seen.count} in all)`,
        model: this.model,
        ...(seen.file === undefined ? {} : { file: seen.file }),
        hint: 'fix the ones listed and run again, or list them all with --max-findings-per-rule all',
      });
    }
    return { name: this.model, findings: this.findings, ...(this.normalized === undefined ? {} : { config: this.normalized }) };
  }

  private async check(): Promise<void> {
    const dir = join(this.root, this.model);
    const configFile = `${this.model}/config.pbtxt`;
    // Triton names the file as it opens it: under the repository path it was given.
    const configPath = join(dir, 'config.pbtxt');
    let config: ModelConfig | undefined;
    let positions: ReadonlyMap<string, SourcePos> = new Map();
    let text: Buffer | undefined;
    try {
      // The bytes go to the parser as they are: a 50 MB config is not also decoded into a string.
      text = await readRegularFile(configPath, { what: 'config.pbtxt', limit: FILE_LIMITS.config });
    } catch (error) {
      if (!isNotFound(error)) throw error;
      this.add('layout/config-missing', `model '${this.model}' has no config.pbtxt: Triton auto-completes an empty config, which it cannot do for a Poplar model`, { file: configFile }, 'add a config.pbtxt (popef config generates one)');
    }
    if (text !== undefined) {
      try {
        const parsed = parsePbtxt(text, { file: configFile });
        config = parsed.message;
        positions = parsed.positions;
      } catch (error) {
        if (!(error instanceof PopefError)) throw error;
        const failure = parseFailure(error, configPath);
        this.add(failure.rule, failure.message, { file: configFile, at: failure.at }, failure.hint);
      }
    }
    const entries = await this.list(dir);
    if (config !== undefined || text === undefined) {
      const checked = checkConfig(config ?? {}, {
        name: this.model,
        tritonVersion: this.options.tritonVersion ?? DEFAULT_TRITON_VERSION,
        configPath,
        ...(await this.firstSubdirectory(dir, entries)),
      });
      this.addRaw(checked.findings, configFile, positions);
      this.normalized = checked.normalized;
      const probes = new Map<string, FileProbe>();
      for (const relative of filesNamedBy(checked.normalized)) probes.set(relative, await probeFile(join(dir, relative)));
      this.addRaw(checkModelFiles(checked.normalized, dir, probes), configFile, positions);
    }
    const versions = await this.versions(dir, entries, config, positions, configFile);
    await this.checkVersions(dir, versions, config, positions, configFile);
    if (config !== undefined && this.options.backendDirectory !== undefined) await this.checkBackend(this.normalized ?? config, versions, positions, configFile);
  }

  /** What Triton's autofill inspects: the first sub-directory of the model directory, whatever its name. */
  private async firstSubdirectory(dir: string, entries: readonly Dirent[]): Promise<{ firstSubdirectory?: DirEntry[] }> {
    const subdirs: string[] = [];
    for (const e of entries) if (await isDirectory(join(dir, e.name), e)) subdirs.push(e.name);
    subdirs.sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    const first = subdirs[0];
    if (first === undefined) return {};
    const inside = await this.list(join(dir, first));
    const out: DirEntry[] = [];
    for (const e of inside) out.push({ name: e.name, isDirectory: await isDirectory(join(dir, first, e.name), e) });
    return { firstSubdirectory: out };
  }

  /** Version directories as Triton reads them, then the ones the policy selects. */
  private async versions(dir: string, entries: readonly Dirent[], config: ModelConfig | undefined, positions: ReadonlyMap<string, SourcePos>, configFile: string): Promise<VersionDir[]> {
    const all: VersionDir[] = [];
    for (const entry of entries) {
      if (!(await isDirectory(join(dir, entry.name), entry)) || NOT_VERSIONS.has(entry.name)) continue;
      const name = entry.name;
      const where = { file: `${this.model}/${name}` };
      if (/^(0|[1-9]\d*)$/.test(name)) {
        all.push({ dir: name, version: Number(name) });
      } else if (name.length > 1 && name.startsWith('0') && /^\d+$/.test(name)) {
        this.add('layout/version-name', `ignore version directory '${name}' which contains leading zeros in its directory name`, where, `rename it to ${String(Number(name))}`);
      } else {
        const prefix = stollPrefix(name);
        if (prefix === undefined) {
          this.add('layout/version-name', `ignore version directory '${name}' which fails to convert to integral number`, where, 'version directories are plain numbers; move other directories out of the model directory');
        } else {
          this.add('layout/version-name', `version directory '${name}' is read by Triton as version ${prefix} (only its numeric prefix counts)`, where, `rename it to ${Math.max(0, prefix)}`);
          all.push({ dir: name, version: prefix });
        }
      }
    }
    const policy = config?.version_policy;
    let selected: VersionDir[];
    const byVersion = [...all].sort((a, b) => b.version - a.version);
    if (policy?.all !== undefined) {
      selected = byVersion;
    } else if (policy?.specific !== undefined) {
      const wanted = (policy.specific.versions ?? []).map(Number);
      selected = byVersion.filter((v) => wanted.includes(v.version));
      for (const w of wanted) {
        if (!all.some((v) => v.version === w)) {
          this.add('layout/specific-version-missing', `version ${w} is specified for model '${this.model}', but the version directory is not present`, { file: configFile, at: positions.get('version_policy') }, `create ${this.model}/${w}/ or remove ${w} from the policy`);
        }
      }
    } else {
      const count = policy?.latest === undefined ? 1 : policy.latest.num_versions ?? 0;
      selected = byVersion.slice(0, count);
    }
    if (selected.length === 0) {
      this.add('layout/no-version', `at least one version must be available under the version policy of model '${this.model}'`, { file: configFile, at: positions.get('version_policy') }, 'add a version directory such as 1/ (popef scaffold creates it)');
    }
    return selected;
  }

  private async checkVersions(dir: string, versions: readonly VersionDir[], config: ModelConfig | undefined, positions: ReadonlyMap<string, SourcePos>, configFile: string): Promise<void> {
    let holdsPopef = false;
    for (const v of versions) {
      const files = (await this.list(join(dir, v.dir))).filter((e) => !e.isDirectory()).map((e) => e.name);
      const popefFiles = files.filter((f) => f.endsWith('.popef')).sort((a, b) => (a === 'executable.popef' ? -1 : b === 'executable.popef' ? 1 : a < b ? -1 : 1));
      if (popefFiles.length > 0) holdsPopef = true;
      const poplar = config?.backend === 'poplar' || popefFiles.length > 0;
      if (!poplar) continue;
      const versionPath = `${this.model}/${v.dir}`;
      if (popefFiles.length === 0) {
        this.add('layout/popef-missing', `version directory ${versionPath} of poplar model '${this.model}' holds no .popef file`, { file: versionPath }, 'put the exported model there as executable.popef (popef scaffold does)');
      } else if (!popefFiles.includes('executable.popef')) {
        this.add('layout/popef-name', `the PopEF file in ${versionPath} is ${popefFiles[0] ?? ''}, not executable.popef as in Graphcore's examples`, { file: `${versionPath}/${popefFiles[0] ?? ''}` }, 'rename it to executable.popef');
      }
      let nameMap: ParsedNameMap | undefined;
      let nameMapUsable = true;
      const nameMapFile = `${versionPath}/name_map.json`;
      if (!files.includes('name_map.json')) {
        this.add('layout/name-map-missing', `version directory ${versionPath} of poplar model '${this.model}' holds no name_map.json`, { file: versionPath }, `popef config FILE -o REPOSITORY -m '${this.model}' writes it (MODEL/1/name_map.json) from the PopEF anchors`);
      } else {
        nameMap = await this.checkNameMap(join(dir, v.dir, 'name_map.json'), nameMapFile, config, positions, configFile);
        nameMapUsable = nameMap !== undefined && nameMap.schemaErrors.length === 0;
      }
      // Config names reach anchors through the map; without a usable map that link is unknown.
      if (popefFiles.length > 0 && config !== undefined && nameMapUsable) {
        await this.checkPopef(popefFiles.map((f) => join(dir, v.dir, f)), popefFiles.map((f) => `${versionPath}/${f}`), config, nameMap, positions, configFile);
      }
    }
    if (holdsPopef && config !== undefined && config.backend !== 'poplar') {
      this.add('popef/backend', `model '${this.model}' holds PopEF files but its backend is ${config.backend === undefined ? 'not set' : `"${config.backend}"`}`, { file: configFile, at: positions.get('backend') }, 'set backend: "poplar"');
    }
  }

  private async checkNameMap(path: string, file: string, config: ModelConfig | undefined, positions: ReadonlyMap<string, SourcePos>, configFile: string): Promise<ParsedNameMap | undefined> {
    let parsed: ParsedNameMap;
    try {
      parsed = parseNameMap(await readRegularText(path, { what: 'name_map.json', limit: FILE_LIMITS.json }), file);
    } catch (error) {
      if (!(error instanceof PopefError)) throw error;
      if (error.code === ErrorCode.Io || error.code === ErrorCode.LimitExceeded) throw error;
      this.add('name-map/invalid', `name_map.json is ${error.message}`, { file, at: error.line === undefined ? undefined : { line: error.line, column: error.column ?? 0 } }, 'write one JSON object of "anchor": "name" pairs');
      return undefined;
    }
    for (const problem of parsed.schemaErrors) this.add('name-map/invalid', `name_map.json does not match its schema: ${problem}`, { file }, 'keys and values are non-empty strings (schemas/name-map.schema.json)');
    const keys = new Map<string, SourcePos>();
    const values = new Map<string, string>();
    for (const e of parsed.entries) {
      const first = keys.get(e.anchor);
      if (first !== undefined) {
        this.add('name-map/duplicate-key', `anchor "${e.anchor}" appears twice in name_map.json (first at ${first.line}:${first.column}); JSON readers keep only the last`, { file, at: e.at }, 'keep one entry per anchor');
        continue;
      }
      keys.set(e.anchor, e.at);
      if (e.name === '') continue;
      const other = values.get(e.name);
      if (other !== undefined) this.add('name-map/duplicate-value', `anchors "${other}" and "${e.anchor}" are both mapped to "${e.name}"`, { file, at: e.at }, 'give each anchor its own Triton name');
      else values.set(e.name, e.anchor);
    }
    // With a malformed map, which tensor is which is unknown: the checks that need it would only echo the damage.
    if (config === undefined || parsed.schemaErrors.length > 0) return parsed;
    const tensors = [...(config.input ?? []).map((t, i) => ({ name: t.name ?? '', path: `input[${i}]` })), ...(config.output ?? []).map((t, i) => ({ name: t.name ?? '', path: `output[${i}]` }))];
    const tensorNames = new Set(tensors.map((t) => t.name));
    for (const e of parsed.entries) {
      if (e.name !== '' && !tensorNames.has(e.name)) {
        this.add('name-map/unknown-tensor', `name_map.json maps anchor "${e.anchor}" to "${e.name}", which is not an input or output of config.pbtxt`, { file, at: e.at }, 'fix the name, or add the tensor to the config');
      }
    }
    for (const t of tensors) {
      if (t.name !== '' && !values.has(t.name)) {
        this.add('name-map/unmapped-tensor', `config tensor "${t.name}" of model '${this.model}' is not a value in name_map.json`, { file: configFile, at: positions.get(t.path) }, 'add "ANCHOR": "NAME" for it to name_map.json');
      }
    }
    return parsed;
  }

  private async checkPopef(paths: readonly string[], shown: readonly string[], config: ModelConfig, nameMap: ParsedNameMap | undefined, positions: ReadonlyMap<string, SourcePos>, configFile: string): Promise<void> {
    let set: ModelSet | undefined;
    try {
      set = await ModelSet.open(paths);
      if (set.models.length !== 1) {
        this.add('popef/unreadable', `${shown.join(' + ')} hold${shown.length === 1 ? 's' : ''} ${set.models.length} models; the Poplar backend serves one per version`, { file: shown[0] }, 'keep one model per version directory');
        return;
      }
      const model = set.model();
      if (model.metadata === undefined) {
        this.add('popef/unreadable', `executable "${model.name}" in ${shown.join(' + ')} has no metadata`, { file: shown[0] }, 'export the model again');
        return;
      }
      const anchorOf = new Map<string, string>();
      for (const e of nameMap?.entries ?? []) if (e.name !== '' && !anchorOf.has(e.name)) anchorOf.set(e.name, e.anchor);
      this.addRaw(checkAgainstPopef(config, anchorOf, model.metadata, set.storedTensorNames, this.model, this.wanter()), configFile, positions);
    } catch (error) {
      if (!(error instanceof PopefError)) throw error;
      const index = paths.findIndex((p) => p === error.file);
      const file = shown[index] ?? shown[0];
      const where = error.offset === undefined ? '' : ` at offset ${error.offset}${error.field === undefined ? '' : ` (${error.field})`}`;
      this.add('popef/unreadable', `${file ?? 'PopEF'}${where}: ${error.message} [${error.code}]`, { file }, error.suggestion);
    } finally {
      await set?.close();
    }
  }

  /** The backend library each model needs, searched where Triton searches: version dir, model dir, backend dir. */
  private async checkBackend(config: ModelConfig, versions: readonly VersionDir[], positions: ReadonlyMap<string, SourcePos>, configFile: string): Promise<void> {
    const backendDir = this.options.backendDirectory ?? '';
    const backend = config.backend ?? '';
    if (backend === '') return;
    const runtime = config.runtime ?? '';
    const library = runtime === '' ? `libtriton_${backend}.so` : runtime;
    // Where TritonModel::GetBackendLibraryProperties looks: version dir, model dir, backend dir.
    const searched = [...versions.map((v) => join(this.root, this.model, v.dir)), join(this.root, this.model), join(backendDir, backend)];
    let found: string | undefined;
    for (const dir of searched) {
      const candidate = join(dir, library);
      const exists = await stat(candidate).then(
        (st) => st.isFile(),
        () => false,
      );
      if (exists) {
        found = candidate;
        break;
      }
    }
    // Triton checks that the library it found stays inside the backend directory only once it found one.
    if (found !== undefined) {
      if (runtime !== '' && escapes(runtime)) {
        this.add('backend/runtime-escapes', `backend library name '${runtime}' escapes backend directory '${join(backendDir, backend)}', for model '${this.model}', check model config runtime field`, { file: configFile, at: positions.get('runtime') }, 'name a file inside the backend directory');
      }
      return;
    }
    const message =
      runtime === ''
        ? `unable to find backend library for backend '${backend}', try specifying runtime on the model configuration.`
        : `unable to find backend library '${library}' for model '${this.model}', searched: ${searched.map((c) => `'${c}' `).join('')}`;
    this.add('backend/library-missing', message, { file: configFile, at: positions.get(runtime === '' ? 'backend' : 'runtime') }, `install ${library} in the backend directory as ${backend}/${library}`);
  }
}

/** Rules Triton applies while polling the repository, before a model enters the dependency graph. */
const POLL_RULES: ReadonlySet<RuleId> = new Set<RuleId>([
  'config/parse', 'config/newer-than-target', 'config/name-mismatch', 'config/no-backend', 'config/unknown-platform', 'config/platform-backend-pair',
  'config/ensemble', 'config/max-batch-size', 'config/preferred-batch-size', 'config/priority-levels', 'config/response-cache', 'config/sequence-batching',
]);

/**
 * Mirrors the dependency check of ModelRepositoryManager's dependency graph:
 * an ensemble loads only when every model its steps name exists and loads.
 */
function checkEnsembleSteps(report: ModelReport, repositoryModels: ReadonlySet<string>, reports: ReadonlyMap<string, ModelReport>): ModelReport {
  const config = report.config;
  if (config?.platform !== 'ensemble' || config.ensemble_scheduling === undefined) return report;
  const steps = [...new Set((config.ensemble_scheduling.step ?? []).map((s) => s.model_name ?? '').filter((s) => s !== ''))].sort();
  const extra: Finding[] = [];
  const finding = (message: string, hint: string): Finding => ({
    rule: 'config/ensemble-step-missing',
    severity: 'error',
    message,
    model: report.name,
    file: `${report.name}/config.pbtxt`,
    hint,
  });
  // A step refused at poll time is not in the dependency graph at all: Triton calls it not available.
  const stepErrors = (step: string): readonly Finding[] => reports.get(step)?.findings.filter((f) => f.severity === 'error' && RULES[f.rule].mirrors !== null) ?? [];
  const missing = steps.filter((s) => !repositoryModels.has(s) || stepErrors(s).some((f) => POLL_RULES.has(f.rule)));
  if (missing.length > 0) {
    extra.push(finding(`ensemble ${config.name ?? report.name} contains models that are not available or ambiguous: ${missing.join(', ')}`, 'add the step models to the repository, or fix model_name'));
  } else {
    for (const step of steps) {
      const failed = stepErrors(step)[0];
      if (failed !== undefined) {
        extra.push(finding(`ensemble '${config.name ?? report.name}' depends on '${step}' which has no loaded version. Model '${step}' loading failed with error: ${failed.message}`, `fix model ${step} first`));
        break;
      }
    }
    // With every step loaded, Triton checks the ensemble's tensors against the steps' configs.
    if (extra.length === 0) {
      const stepConfigs = new Map<string, ModelConfig>();
      for (const step of steps) {
        const stepConfig = reports.get(step)?.config;
        if (stepConfig !== undefined) stepConfigs.set(step, stepConfig);
      }
      const tensors = validateEnsembleConfig(config, stepConfigs);
      if (tensors !== undefined) extra.push({ ...finding(tensors.message, tensors.hint ?? ''), rule: tensors.rule });
    }
  }
  return extra.length === 0 ? report : { ...report, findings: [...report.findings, ...extra] };
}

/** Validates one repository. Throws only when the repository itself cannot be read (exit 2). */
export async function validateRepository(root: string, options: ValidateOptions = {}): Promise<RepositoryReport> {
  const info = await stat(root).catch((error: unknown) => {
    throw ioError(error, root, 'open the model repository');
  });
  if (!info.isDirectory()) {
    throw new PopefError(ErrorCode.Io, 'not a directory', { file: root, suggestion: 'give the model repository directory (the one passed to tritonserver --model-repository)' });
  }
  const findings: Finding[] = [];
  const models: ModelReport[] = [];
  const entries = (await listDir(root)).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const wanted = options.models === undefined ? undefined : new Set(options.models);
  const modelNames: string[] = [];
  const modelDirectories = new Set<string>();
  for (const entry of entries) {
    if (!(await isDirectory(join(root, entry.name), entry))) continue;
    if (!entry.name.startsWith('.')) modelDirectories.add(entry.name);
    if (wanted !== undefined && !wanted.has(entry.name)) continue;
    if (entry.name.startsWith('.')) {
      findings.push({
        rule: 'layout/hidden-directory',
        severity: options.strict === true ? 'error' : 'warning',
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
  const reports: ModelReport[] = new Array<ModelReport>(modelNames.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < modelNames.length) {
      const index = next++;
      reports[index] = await new ModelChecker(root, modelNames[index] ?? '', options).run();
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, modelNames.length) }, worker));
  const byName = new Map(reports.map((r) => [r.name, r]));
  for (const r of reports) models.push(checkEnsembleSteps(r, modelDirectories, byName));
  if (wanted !== undefined) {
    for (const name of wanted) {
      if (!models.some((m) => m.name === name) && !findings.some((f) => f.file === name)) {
        throw new PopefError(ErrorCode.InvalidInput, `no model directory named "${name}"`, { file: root, suggestion: 'check --model against the directories of the repository' });
      }
    }
  }
  return { repository: root, models, findings };
}

/** Counts of errors and warnings over reports. */
export function summarizeFindings(reports: readonly RepositoryReport[]): { errors: number; warnings: number; models: number } {
  const all = reports.flatMap((r) => [...r.findings, ...r.models.flatMap((m) => m.findings)]);
  return {
    errors: all.filter((f) => f.severity === 'error').length,
    warnings: all.filter((f) => f.severity === 'warning').length,
    models: reports.reduce((n, r) => n + r.models.length, 0),
  };
}
