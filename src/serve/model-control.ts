import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { ErrorCode, PopefError } from '../errors.js';
import type { LoadOptions, ModelRepository } from './model-repository.js';
import { RequestError } from './status.js';
import type { ServedModel } from './served-model.js';

/**
 * Triton's model control (--model-control-mode, core r24.10,
 * src/model_repository_manager/model_repository_manager.cc): which models
 * load at start, whether clients may load and unload them, whether the
 * repositories are polled for changes, and the repository index, which
 * lists every model directory, loaded or not.
 *
 * - none: every model loads at start; load and unload are refused.
 * - explicit: only --load-model models load at start ('*': all); clients
 *   load (re-reading the directory) and unload.
 * - poll: as none, and every --repository-poll-secs the directories are
 *   read again: new models load, changed ones reload, removed ones unload.
 */

export type ModelControlMode = 'none' | 'poll' | 'explicit';

export const MODEL_CONTROL_MODES: readonly ModelControlMode[] = ['none', 'poll', 'explicit'];

export interface ModelControlOptions {
  readonly mode: ModelControlMode;
  /** explicit mode: the models loaded at start ('*' for all). */
  readonly loadModels?: readonly string[];
  /** poll mode: seconds between polls. */
  readonly pollSeconds?: number;
}

export interface IndexEntry {
  readonly name: string;
  /** '' (with state and reason) for a model that was never loaded. */
  readonly version: string;
  readonly state: string;
  readonly reason: string;
}

/** A load request's parameters, as Triton's frontends pass them on. */
export interface LoadParameters {
  readonly config?: string;
  readonly files: ReadonlyMap<string, Uint8Array>;
}

/** The model directories of a repository: its subdirectories, as Triton's GetDirectorySubdirs lists them. */
async function subdirectories(root: string): Promise<string[]> {
  const entries = await readdir(root, { withFileTypes: true }).catch(() => []);
  const out: string[] = [];
  for (const e of entries) {
    if (e.isDirectory() || (e.isSymbolicLink() && (await stat(join(root, e.name)).catch(() => undefined))?.isDirectory() === true)) out.push(e.name);
  }
  return out.sort();
}

/** What a poll compares to decide a model changed: every path under its directory with size and time. */
async function fingerprint(dir: string): Promise<string> {
  const parts: string[] = [];
  const walk = async (d: string, depth: number): Promise<void> => {
    const entries = await readdir(d, { withFileTypes: true }).catch(() => []);
    for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const path = join(d, e.name);
      const info = await stat(path).catch(() => undefined);
      if (info === undefined) continue;
      parts.push(`${path}:${info.size}:${info.mtimeMs}`);
      if (info.isDirectory() && depth < 4) await walk(path, depth + 1);
    }
  };
  await walk(dir, 0);
  return parts.join('\n');
}

export class ModelControl {
  private readonly repository: ModelRepository;
  private readonly roots: readonly string[];
  private readonly loadOptions: LoadOptions;
  readonly options: ModelControlOptions;
  private readonly fingerprints = new Map<string, string>();
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  /** One load or unload at a time, as Triton serialises conflicting ones. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(repository: ModelRepository, roots: readonly string[], loadOptions: LoadOptions, options: ModelControlOptions) {
    this.repository = repository;
    this.roots = roots;
    this.loadOptions = loadOptions;
    this.options = options;
  }

  /** The initial load; in poll mode, starts polling. */
  async start(): Promise<void> {
    if (this.options.mode === 'explicit') {
      const wanted = this.options.loadModels ?? [];
      const all = wanted.includes('*');
      const directories = await this.directories();
      const unknown = wanted.find((n) => n !== '*' && !directories.has(n));
      if (unknown !== undefined) {
        throw new PopefError(ErrorCode.InvalidInput, `no model directory named "${unknown}" in ${this.roots.join(', ')}`, {
          suggestion: 'check --load-model against the model directories',
        });
      }
      const names = all ? directories.keys() : wanted;
      const selected = [...names].filter((n) => this.loadOptions.models === undefined || this.loadOptions.models.includes(n));
      await this.repository.load(this.roots, { ...this.loadOptions, models: selected });
    } else {
      await this.repository.load(this.roots, this.loadOptions);
    }
    for (const [name, root] of await this.directories())
      if (this.repository.list().some((m) => m.name === name)) this.fingerprints.set(name, await fingerprint(join(root, name)));
    if (this.options.mode === 'poll') {
      const every = Math.max(1, this.options.pollSeconds ?? 15) * 1000;
      this.timer = setInterval(() => {
        this.polling ??= this.poll().finally(() => (this.polling = undefined));
      }, every);
      this.timer.unref();
    }
  }

  /** Model name -> the repository holding it; a name in several repositories maps to the first. */
  private async directories(): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    for (const root of this.roots) for (const name of await subdirectories(root)) if (!out.has(name)) out.set(name, root);
    return out;
  }

  private serialised<T>(work: () => Promise<T>): Promise<T> {
    const next = this.queue.then(work, work);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private refuseUnlessExplicit(): void {
    if (this.options.mode !== 'explicit') throw new RequestError('UNAVAILABLE', 'explicit model load / unload is not allowed if polling is enabled');
  }

  async load(name: string, parameters: LoadParameters): Promise<void> {
    this.refuseUnlessExplicit();
    if (parameters.config !== undefined || parameters.files.size > 0) {
      throw new RequestError(
        'UNSUPPORTED',
        `popef serve loads models from their directory only; the 'config' and 'file:' load parameters are not supported (model '${name}')`,
      );
    }
    await this.serialised(async () => {
      const root = (await this.directories()).get(name);
      if (root === undefined) throw new RequestError('INTERNAL', `failed to load '${name}', failed to poll from model repository`);
      const served = await this.repository.reload(root, name, this.loadOptions);
      this.fingerprints.set(name, await fingerprint(join(root, name)));
      // Triton answers a load with the first version that failed.
      const failed = served.find((v) => !v.ready);
      if (failed !== undefined)
        throw new RequestError(
          'INVALID_ARG',
          `load failed for model '${name}': version ${failed.version === '' ? 1 : failed.version} is at UNAVAILABLE state: ${failed.reason};\n`,
        );
    });
  }

  /**
   * Answers once the model refuses new requests, as Triton's unload returns
   * while the model is UNLOADING: its queued requests finish and it closes
   * in the background.
   */
  async unload(name: string): Promise<void> {
    this.refuseUnlessExplicit();
    await this.serialised(() => Promise.resolve(this.track(this.repository.unload(name))));
  }

  private readonly draining = new Set<Promise<void>>();

  private track(drain: Promise<void>): void {
    const tracked = drain.catch(() => undefined).finally(() => this.draining.delete(tracked));
    this.draining.add(tracked);
  }

  /**
   * The repository index: every model directory, with one entry for each
   * loaded version (Triton lists each version its policy selected, in
   * ascending order), or one without a version for a model never loaded.
   */
  async index(readyOnly: boolean): Promise<IndexEntry[]> {
    const served = new Map<string, ServedModel[]>();
    for (const m of this.repository.list()) {
      const versions = served.get(m.name);
      if (versions === undefined) served.set(m.name, [m]);
      else versions.push(m);
    }
    const names = new Set([...(await this.directories()).keys(), ...served.keys()]);
    const out: IndexEntry[] = [];
    for (const name of [...names].sort()) {
      const versions = served.get(name);
      if (versions === undefined) {
        if (!readyOnly) out.push({ name, version: '', state: '', reason: '' });
        continue;
      }
      for (const m of versions) {
        const state = this.repository.stateOf(m);
        if (!readyOnly || state === 'READY') out.push({ name, version: m.version, state, reason: m.reason });
      }
    }
    return out;
  }

  /** One poll: loads new models, reloads changed ones, unloads those whose directory went away. */
  private async poll(): Promise<void> {
    const dirs = await this.directories();
    for (const [name, root] of dirs) {
      const now = await fingerprint(join(root, name));
      if (this.fingerprints.get(name) === now) continue;
      if (this.loadOptions.models !== undefined && !this.loadOptions.models.includes(name)) continue;
      this.fingerprints.set(name, now);
      await this.serialised(() => this.repository.reload(root, name, this.loadOptions)).catch(() => undefined);
    }
    for (const name of [...this.fingerprints.keys()]) {
      if (dirs.has(name)) continue;
      this.fingerprints.delete(name);
      await this.serialised(() => Promise.resolve(this.track(this.repository.unload(name))));
    }
  }

  async stop(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    await this.polling;
    await this.queue;
    await Promise.all(this.draining);
  }
}
