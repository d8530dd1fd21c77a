import type { ModelConfig } from '../model-config.js';
import type { RawFinding } from './findings.js';
import type { ModelDirectoryRead, VersionDirectory } from './model-directory.js';

/**
 * The layout rules: what Triton makes of a model directory's version
 * directories (VersionsToLoad, core r24.10) and what the Poplar backend
 * needs in each version it serves. Pure: a model directory as
 * model-directory.ts read it and the parsed config in, findings out.
 */

/** Version directory names Triton ignores or misreads. */
export function versionNameRules(directory: Pick<ModelDirectoryRead, 'name' | 'candidates'>): RawFinding[] {
  const out: RawFinding[] = [];
  for (const c of directory.candidates) {
    const file = `${directory.name}/${c.dir}`;
    if (c.verdict === 'leading-zeros') {
      out.push({
        rule: 'layout/version-name',
        message: `ignore version directory '${c.dir}' which contains leading zeros in its directory name`,
        file,
        hint: `rename it to ${String(Number(c.dir))}`,
      });
    } else if (c.verdict === 'not-a-number') {
      out.push({
        rule: 'layout/version-name',
        message: `ignore version directory '${c.dir}' which fails to convert to integral number`,
        file,
        hint: 'version directories are plain numbers; move other directories out of the model directory',
      });
    } else if (c.verdict === 'numeric-prefix') {
      const prefix = c.version ?? 0;
      out.push({
        rule: 'layout/version-name',
        message: `version directory '${c.dir}' is read by Triton as version ${prefix} (only its numeric prefix counts)`,
        file,
        hint: `rename it to ${Math.max(0, prefix)}`,
      });
    }
  }
  return out;
}

/** The version policy against the version directories present. */
export function versionPolicyRules(
  directory: Pick<ModelDirectoryRead, 'name' | 'candidates' | 'selected'>,
  config: ModelConfig | undefined,
): RawFinding[] {
  const out: RawFinding[] = [];
  const m = directory.name;
  const specific = config?.version_policy?.specific;
  if (specific !== undefined) {
    for (const w of (specific.versions ?? []).map(Number)) {
      if (!directory.candidates.some((v) => v.version === w)) {
        out.push({
          rule: 'layout/specific-version-missing',
          message: `version ${w} is specified for model '${m}', but the version directory is not present`,
          path: 'version_policy',
          hint: `create ${m}/${w}/ or remove ${w} from the policy`,
        });
      }
    }
  }
  if (directory.selected.length === 0) {
    out.push({
      rule: 'layout/no-version',
      message: `at least one version must be available under the version policy of model '${m}'`,
      path: 'version_policy',
      hint: 'add a version directory such as 1/ (popef scaffold creates it)',
    });
  }
  return out;
}

/** Whether the Poplar backend serves this version: the config names it, or the version holds PopEF files. */
export function servedByPoplar(version: Pick<VersionDirectory, 'popefFiles'>, config: ModelConfig | undefined): boolean {
  return config?.backend === 'poplar' || version.popefFiles.length > 0;
}

/** What a served version of a poplar model holds: a PopEF file, named as Graphcore names it, and a name map. */
export function versionFileRules(
  model: string,
  version: Pick<VersionDirectory, 'dir' | 'files' | 'popefFiles'>,
  config: ModelConfig | undefined,
  options: { readonly requirePopef?: boolean } = {},
): RawFinding[] {
  if (!servedByPoplar(version, config)) return [];
  const out: RawFinding[] = [];
  const versionPath = `${model}/${version.dir}`;
  const first = version.popefFiles[0];
  // Without --require-popef a version without PopEF is checked as far as it goes and noted (notCrossCheckedRule).
  if (first === undefined) {
    if (options.requirePopef === true)
      out.push({
        rule: 'layout/popef-missing',
        message: `version directory ${versionPath} of poplar model '${model}' holds no .popef file`,
        file: versionPath,
        hint: 'put the exported model there as executable.popef (popef scaffold does)',
        unusable: ['popef'],
      });
  } else if (first !== 'executable.popef') {
    out.push({
      rule: 'layout/popef-name',
      message: `the PopEF file in ${versionPath} is ${first}, not executable.popef as in Graphcore's examples`,
      file: `${versionPath}/${first}`,
      hint: 'rename it to executable.popef',
    });
  }
  if (!version.files.includes('name_map.json')) {
    out.push({
      rule: 'layout/name-map-missing',
      message: `version directory ${versionPath} of poplar model '${model}' holds no name_map.json`,
      file: versionPath,
      hint: `popef config FILE -o REPOSITORY -m '${model}' writes it (MODEL/1/name_map.json) from the PopEF anchors`,
      // Without the map the config's names are compared with the anchors' as they are, which fails wherever the map would rename.
      unusable: ['name-map'],
    });
  }
  return out;
}

/** A model directory holding PopEF files is served by the Poplar backend. */
export function popefBackendRule(directory: Pick<ModelDirectoryRead, 'name' | 'selected'>, config: ModelConfig | undefined): RawFinding[] {
  if (config === undefined || config.backend === 'poplar' || !directory.selected.some((v) => v.popefFiles.length > 0)) return [];
  const backend = config.backend === undefined ? 'not set' : `"${config.backend}"`;
  return [
    {
      rule: 'popef/backend',
      message: `model '${directory.name}' holds PopEF files but its backend is ${backend}`,
      path: 'backend',
      hint: 'set backend: "poplar"',
    },
  ];
}

/** Why one version's PopEF cross-check was not done. */
export type NotCrossChecked = { readonly kind: 'no-popef'; readonly versionPath: string } | { readonly kind: 'foreign'; readonly file: string };

/**
 * popef/not-cross-checked: one notice per model whose served versions hold
 * no PopEF file or one not in the open layout (every real export, written by
 * the Poplar SDK). The config, layout and name-map rules ran; the anchors
 * were not compared. An error under --require-popef.
 */
export function notCrossCheckedRule(model: string, reasons: readonly NotCrossChecked[], requirePopef: boolean): RawFinding {
  const why = reasons.map((r) =>
    r.kind === 'no-popef'
      ? `no PopEF file in ${r.versionPath}`
      : `${r.file} is not in the PopEF open layout (written by the Poplar SDK: its encoding is unpublished)`,
  );
  const first = reasons[0];
  const hint =
    first?.kind === 'foreign'
      ? `commit a description beside it: popef describe ${first.file} (on a machine with the Poplar SDK) writes ${first.file}.json, which validate cross-checks`
      : `commit the export as ${first?.versionPath ?? model}/executable.popef, or its description as ${first?.versionPath ?? model}/executable.popef.json (popef describe writes one)`;
  return {
    rule: 'popef/not-cross-checked',
    message: `anchors not cross-checked for model '${model}': ${why.join('; ')}`,
    file: first === undefined ? model : first.kind === 'foreign' ? first.file : first.versionPath,
    hint: requirePopef ? hint : `${hint}; --require-popef makes this an error`,
    ...(requirePopef ? { severity: 'error' as const } : {}),
  };
}
