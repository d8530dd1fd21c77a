import { join } from 'node:path';
import type { ModelConfig } from '../model-config.js';
import { escapes } from './own-rules.js';
import type { RawFinding } from './findings.js';

/**
 * The backend-library rules of TritonModel::GetBackendLibraryProperties
 * (core r24.10): the library is searched in each version directory, the
 * model directory, then the backend's directory, and a runtime it finds
 * must not name a file outside the backend directory.
 */

/** The library a config needs, or undefined when it names no backend. */
export function backendLibrary(config: ModelConfig): { backend: string; runtime: string; library: string } | undefined {
  const backend = config.backend ?? '';
  if (backend === '') return undefined;
  const runtime = config.runtime ?? '';
  return { backend, runtime, library: runtime === '' ? `libtriton_${backend}.so` : runtime };
}

/** Where Triton looks for it, in order. */
export function backendSearchPath(modelPath: string, versionDirs: readonly string[], backendDirectory: string, backend: string): string[] {
  return [...versionDirs.map((v) => join(modelPath, v)), modelPath, join(backendDirectory, backend)];
}

export interface BackendProbe {
  readonly model: string;
  readonly backendDirectory: string;
  /** The directories searched, in order (backendSearchPath). */
  readonly searched: readonly string[];
  /** The first of them holding the library, if any. */
  readonly found?: string;
}

/** Pure: the config and where the library was found in, findings out. */
export function backendLibraryRules(config: ModelConfig, probe: BackendProbe): RawFinding[] {
  const lib = backendLibrary(config);
  if (lib === undefined) return [];
  const { backend, runtime, library } = lib;
  // Triton checks that the library it found stays inside the backend directory only once it found one.
  if (probe.found !== undefined) {
    if (runtime !== '' && escapes(runtime)) {
      return [
        {
          rule: 'backend/runtime-escapes',
          message: `backend library name '${runtime}' escapes backend directory '${join(probe.backendDirectory, backend)}', for model '${probe.model}', check model config runtime field`,
          path: 'runtime',
          hint: 'name a file inside the backend directory',
        },
      ];
    }
    return [];
  }
  const message =
    runtime === ''
      ? `unable to find backend library for backend '${backend}', try specifying runtime on the model configuration.`
      : `unable to find backend library '${library}' for model '${probe.model}', searched: ${probe.searched.map((c) => `'${c}' `).join('')}`;
  return [
    {
      rule: 'backend/library-missing',
      message,
      path: runtime === '' ? 'backend' : 'runtime',
      hint: `install ${library} in the backend directory as ${backend}/${library}`,
    },
  ];
}
