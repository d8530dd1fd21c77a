import { statSync } from 'node:fs';
import { basename, dirname, normalize } from 'node:path';
import { ErrorCode, PopefError, ioError } from '../../errors.js';
import type { ModelConfig } from '../model-config.js';
import { MAX_FINDINGS_PER_RULE } from './finding-limit.js';
import { validateEnsembleConfig } from './ensemble-rules.js';
import { FindingSink } from './finding-sink.js';
import { RULES, type Finding, type RawFinding, type RuleId } from './findings.js';
import { checkModel, checkedFields, isFile, type CheckedModel, type ValidateOptions } from './model-check.js';
import { checkModelsInParallel, type PoolOptions } from './model-pool.js';
import { isDirectory, isLinkLoop, listDir } from './model-directory.js';
import { childPath } from '../../io/child-path.js';

/**
 * `popef validate` without the CLI: walks a Triton model repository the way
 * Triton polls it and returns findings per model. Reads config.pbtxt,
 * name_map.json and the PopEF files' headers and metadata, nothing more.
 */

export type { ValidateOptions };
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
export function validateRepository(root: string, options: ValidateOptions = {}): Promise<RepositoryReport> {
  return validateRepositoryWith(root, options, {});
}

/**
 * validateRepository, with `pool` saying how its worker threads run
 * (model-pool.ts): the tests' way to see workers at work. The report is the
 * same whatever it says.
 */
export async function validateRepositoryWith(root: string, options: ValidateOptions, pool: PoolOptions): Promise<RepositoryReport> {
  let info: ReturnType<typeof statSync>;
  try {
    info = statSync(root);
  } catch (error) {
    throw ioError(error, root, 'open the model repository');
  }
  if (!info.isDirectory()) {
    throw new PopefError(ErrorCode.Io, 'not a directory', {
      file: root,
      suggestion: 'give the model repository directory (the one passed to tritonserver --model-repository)',
    });
  }
  // Paths below the root are built on its normalized form (childPath).
  const base = normalize(root);
  const repositorySink = new FindingSink({ strict: options.strict, limit: options.maxFindingsPerRule });
  // `popef validate models/mnist`: a model directory given where its repository belongs.
  if (isFile(childPath(base, 'config.pbtxt'))) {
    const parent = basename(dirname(root)) || dirname(root);
    repositorySink.add({
      rule: 'layout/model-directory',
      message: `${basename(root)} holds config.pbtxt: it is a model directory, not a model repository, so its version directories are read as models`,
      file: 'config.pbtxt',
      // No command named: serve logs this finding too, and the directory to give is the same to both.
      hint: `give the repository that holds it: ${parent} (the directory passed to tritonserver --model-repository)`,
    });
  }
  const entries = listDir(root).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const wanted = options.models === undefined ? undefined : new Set(options.models);
  const modelNames: string[] = [];
  const modelDirectories = new Set<string>();
  const hidden = new Set<string>();
  for (const entry of entries) {
    if (isLinkLoop(childPath(base, entry.name), entry)) {
      repositorySink.add({
        rule: 'layout/link-loop',
        message: `${entry.name} is a symbolic link loop (ELOOP): Triton cannot open it as a model directory`,
        file: entry.name,
        hint: 'point the link at a real directory, or remove it',
      });
      continue;
    }
    if (!isDirectory(childPath(base, entry.name), entry)) continue;
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
  if (modelNames.length === 0 && hidden.size === 0 && wanted === undefined) repositorySink.add(noModels(root, entries));
  // Models are independent: a large repository is checked on every core (model-pool.ts), a small one here.
  const { checked } = await checkModelsInParallel(base, modelNames, options, checkModel, pool);
  const byName = new Map(checked.map((c) => [c.name, c]));
  // Every model's own findings are in before the ensembles look at their steps.
  const ensembleFindings = checked.map((c) => ensembleStepRules(c, modelDirectories, byName));
  const models: ModelReport[] = checked.map((c, i) => {
    c.sink.addAll(ensembleFindings[i] ?? []);
    return {
      name: c.name,
      findings: c.sink.close(),
      ...checkedFields(c),
    };
  });
  if (wanted !== undefined) {
    for (const name of wanted) {
      if (!models.some((m) => m.name === name) && !hidden.has(name)) {
        throw new PopefError(ErrorCode.InvalidInput, `no model directory named "${name}"`, {
          file: root,
          suggestion: `check --model against the repository's model directories: ${namesForHint([...modelDirectories].sort())}`,
        });
      }
    }
  }
  return { repository: root, models, findings: repositorySink.close() };
}

/** Up to ten names, for a hint; the rest counted. */
function namesForHint(names: readonly string[]): string {
  if (names.length === 0) return '(there are none)';
  const shown = names.slice(0, 10).join(', ');
  return names.length > 10 ? `${shown} and ${names.length - 10} more` : shown;
}

/**
 * A repository without model directories: Triton starts on it with nothing
 * loaded, and a CI gate given a wrong but existing path would pass having
 * checked nothing. A version directory (what scaffold writes into
 * MODEL/1/) is named as such, with the repository two levels up.
 */
function noModels(root: string, entries: readonly { readonly name: string }[]): RawFinding {
  const versionLike = /^\d+$/.test(basename(root)) && entries.some((e) => e.name === 'name_map.json' || e.name.endsWith('.popef'));
  const repository = dirname(dirname(root));
  return {
    rule: 'layout/no-models',
    message: versionLike
      ? `${basename(root)} holds PopEF or name_map.json files and no model directories: it is a version directory, not a model repository`
      : `${basename(root) || root} holds no model directories: Triton would start with no models loaded`,
    hint: versionLike
      ? `give the repository that holds its model: ${repository}`
      : 'give the directory passed to tritonserver --model-repository, which holds one directory per model',
  };
}

/**
 * Counts of errors, warnings and notices over reports (causes and findings
 * that follow from none), of the findings folded into their causes, and of
 * the models whose PopEF cross-check was not done. A folded error leaves the
 * exit code as it was: its cause is an error too.
 */
export function summarizeFindings(reports: readonly RepositoryReport[]): {
  errors: number;
  warnings: number;
  notices: number;
  folded: number;
  models: number;
  notCrossChecked: number;
} {
  const all = reports.flatMap((r) => [...r.findings, ...r.models.flatMap((m) => m.findings)]);
  return {
    errors: all.filter((f) => f.severity === 'error').length,
    warnings: all.filter((f) => f.severity === 'warning').length,
    notices: all.filter((f) => f.severity === 'info').length,
    folded: all.reduce((n, f) => n + (f.consequences?.length ?? 0), 0),
    models: reports.reduce((n, r) => n + r.models.length, 0),
    notCrossChecked: reports.reduce((n, r) => n + r.models.filter((m) => m.findings.some((f) => f.rule === 'popef/not-cross-checked')).length, 0),
  };
}
