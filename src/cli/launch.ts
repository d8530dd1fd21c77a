import {
  closeSync,
  fstatSync,
  lstatSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
  constants,
} from 'node:fs';
import { isAscii } from 'node:buffer';
import module from 'node:module';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import type * as V8 from 'node:v8';
import vm from 'node:vm';
import { crc32 } from 'node:zlib';
import { makeDirectoriesSync } from '../io/make-directories.js';

/**
 * Loads the bundled CLI (dist/bin.cjs) for bin/popef.cjs, keeping V8's
 * compiled code between runs. Compiling the bundle is the largest cost of
 * a short command after Node's own start: a code cache halves what popef
 * adds to `node -e 1` on Node 20 (test/bench/run.ts prints both).
 *
 * Node 22.1 and later have this built in (module.enableCompileCache), and
 * get it. Node 20 has no such API, so the bundle is compiled here through
 * vm.Script with cachedData, the mechanism Node's own cache is built on.
 * Everything is best effort: any failure to read or write the cache means
 * a normal compile, never an error.
 *
 * Why the cache is keyed as it is:
 * - V8 checks its own version and flags, but of the source only its length,
 *   so a cache made for other code of the same length would be accepted.
 *   The key therefore carries a CRC-32 of the bundle's bytes.
 * - Each command, and each output format of it, gets its own file: a cache
 *   holds what the run that wrote it compiled, so the cache `popef --help`
 *   writes would not help `dump`, nor the one `dump` writes `dump --json`.
 * - Cached code is code: the directory and each file must belong to this
 *   user and be writable by no one else, or the cache is not used.
 */
export interface LaunchResult {
  readonly exports: Record<string, unknown>;
  /** hit: compiled from the cache; miss/rejected: compiled, cache written at exit (unless the exit code is 2 or more); off: plain require. */
  readonly cache: 'hit' | 'miss' | 'rejected' | 'off';
  /** Why the cache is off, or where it is. */
  readonly detail: string;
  /**
   * Writes the cache now, with what has been compiled so far, after a miss
   * or a rejection (once; otherwise nothing). For `saveAt: 'caller'`.
   */
  readonly saveCache: () => void;
}

export interface LaunchOptions {
  readonly env?: NodeJS.ProcessEnv;
  /** The command line, whose command word and output format select the cache file. */
  readonly argv?: readonly string[];
  /** Where cache files go; default $XDG_CACHE_HOME/popef-toolkit or ~/.cache/popef-toolkit. */
  readonly cacheDir?: string;
  /** The cache file's name in place of the one the command line gives (lower-case letters, digits, '.' and '-'). */
  readonly cacheName?: string;
  /**
   * When the cache is written: at the process's exit (the default), or when
   * the caller calls saveCache. A worker thread that is terminated has no
   * exit of its own to write at.
   */
  readonly saveAt?: 'exit' | 'caller';
}

/** Caches larger than this are not read (ours are about 0.35 MiB). */
const MAX_CACHE_BYTES = 64 * 1024 * 1024;
/** Cache files kept per directory; the oldest go first (typos of a command make one each). */
const MAX_CACHE_FILES = 32;
// __popefImport: import() has no loader inside a vm.Script on Node 20, so the
// bundle's run-time imports (plugins, onnxruntime-node) come through this
// module's own (see src/run/import-module.ts).
const WRAPPER_HEAD = '(function (exports, require, module, __filename, __dirname, __popefImport) { ';
const WRAPPER_TAIL = '\n})';

export function launch(file: string, options: LaunchOptions = {}): LaunchResult {
  const env = options.env ?? process.env;
  const plain = (detail: string): LaunchResult => ({
    exports: module.createRequire(file)(file) as Record<string, unknown>,
    cache: 'off',
    detail,
    saveCache: () => undefined,
  });
  const disabled = env.POPEF_NO_COMPILE_CACHE ?? env.NODE_DISABLE_COMPILE_CACHE;
  if (disabled !== undefined && disabled !== '' && disabled !== '0') return plain('disabled by the environment');
  const nodeCache = (module as { enableCompileCache?: () => unknown }).enableCompileCache;
  if (nodeCache !== undefined) {
    nodeCache();
    return plain("Node's own compile cache (module.enableCompileCache)");
  }
  const dir = options.cacheDir ?? defaultCacheDir(env);
  if (dir === undefined) return plain('no home directory for the cache');
  // Before the bundle is read: a directory that cannot be used means a plain require, which reads it itself.
  const usable = privateDirectory(dir);
  if (usable !== true) return plain(usable);
  const bytes = readFileSync(file);
  // esbuild writes ASCII (it escapes the rest), which decodes faster as Latin-1, to the same string.
  const source = isAscii(bytes) ? bytes.toString('latin1') : bytes.toString('utf8');
  const name =
    options.cacheName !== undefined && CACHE_NAME.test(options.cacheName) ? options.cacheName : cacheName(options.argv ?? process.argv.slice(2));
  const key = `${name}-${crc32(bytes).toString(16).padStart(8, '0')}-${bytes.length}-v8-${process.versions.v8}-${process.arch}.bin`;
  const cachePath = join(dir, key);
  const cachedData = readPrivateFile(cachePath);
  const script = new vm.Script(WRAPPER_HEAD + source + WRAPPER_TAIL, {
    filename: file,
    ...(cachedData === undefined ? {} : { cachedData }),
  });
  const cache = cachedData === undefined ? 'miss' : script.cachedDataRejected === true ? 'rejected' : 'hit';
  // V8 takes a cache only under the flags it was made with, and the run that compiles the next time compiles as this
  // one did: a cache made after the flags changed (validate's worker, when TurboFan came back on before its first
  // reply) would be refused every time, and rewritten. The tag says which flags are in force; it is read only on a
  // miss, as node:v8 costs a millisecond to load.
  const flagsAtCompile = cache === 'hit' ? undefined : v8Tag();
  const exports = runWrapped(script, file);
  let pending = cache !== 'hit';
  const saveCache = (): void => {
    if (!pending) return;
    pending = false;
    if (v8Tag() === flagsAtCompile) writeCache(dir, cachePath, script);
  };
  if (pending && options.saveAt !== 'caller') {
    // At exit the cache holds everything this run compiled, not only the top level.
    process.once('exit', (code) => {
      // A run that failed (exit 2 and up) took an error path: the next one is likelier to show what the command usually compiles.
      if (code < 2) saveCache();
    });
  }
  return { exports, cache, detail: cachePath, saveCache };
}

/** V8's cachedDataVersionTag: its version and the flags in force, as a cache is checked against them. */
function v8Tag(): number {
  return (module.createRequire(import.meta.url)('node:v8') as typeof V8).cachedDataVersionTag();
}

/** Runs the compiled wrapper as Node runs a CommonJS module. */
function runWrapped(script: vm.Script, file: string): Record<string, unknown> {
  type Wrapped = (
    exports: object,
    require: NodeJS.Require,
    module: { exports: object },
    filename: string,
    dirname: string,
    importer: (specifier: string) => Promise<unknown>,
  ) => void;
  const wrapped = script.runInThisContext() as Wrapped;
  const mod = { exports: {} as Record<string, unknown> };
  wrapped.call(mod.exports, mod.exports, module.createRequire(file), mod, file, dirname(file), (specifier) => import(specifier));
  return mod.exports;
}

function defaultCacheDir(env: NodeJS.ProcessEnv): string | undefined {
  const xdg = env.XDG_CACHE_HOME;
  if (xdg !== undefined && xdg.startsWith('/')) return join(xdg, 'popef-toolkit');
  let home: string;
  try {
    home = homedir();
  } catch {
    return undefined;
  }
  return home === '' ? undefined : join(home, '.cache', 'popef-toolkit');
}

/** A cache name a caller may give (LaunchOptions.cacheName): it becomes part of a file name. */
const CACHE_NAME = /^[a-z][a-z0-9.-]{0,39}$/;

/**
 * The cache file for a run: the command's word when it looks like one, else
 * "other", and the output format when one is asked for (`dump --json` runs
 * other code than `dump`, and a cache holds only what its first run compiled).
 */
function cacheName(argv: readonly string[]): string {
  const word = argv.find((a) => !a.startsWith('-'));
  const command = word !== undefined && /^[a-z][a-z-]{0,15}$/.test(word) ? word : 'other';
  const at = argv.indexOf('--format');
  const format = at >= 0 ? argv[at + 1] : argv.includes('--json') ? 'json' : argv.includes('--markdown') ? 'markdown' : undefined;
  return format !== undefined && /^[a-z]{1,10}$/.test(format) ? `${command}.${format}` : command;
}

const uid = (): number | undefined => process.getuid?.();

/** Makes the directory if needed; true when it belongs to this user and no one else may write to it, else why not. */
function privateDirectory(dir: string): true | string {
  try {
    // Not Node's recursive mkdir, which never returns for a path under /proc (make-directories.ts).
    makeDirectoriesSync(dir, 0o700);
    const st = lstatSync(dir);
    if (!st.isDirectory()) return `${dir} is not a directory`;
    if (st.uid !== uid() && uid() !== undefined) return `${dir} belongs to another user`;
    if ((st.mode & 0o022) !== 0) return `${dir} is writable by others`;
    return true;
  } catch (error) {
    return `${dir}: ${(error as Error).message}`;
  }
}

/** The file's bytes when it is a regular file of this user's that no one else may write, else undefined. */
function readPrivateFile(path: string): Buffer | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || (st.uid !== uid() && uid() !== undefined) || (st.mode & 0o022) !== 0 || st.size > MAX_CACHE_BYTES) return undefined;
    // Cache files are only ever replaced whole (written aside, then renamed), so this reads one complete file.
    return readFileSync(fd);
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

/** Writes the cache atomically (temp file, then rename) and keeps the directory to MAX_CACHE_FILES. */
function writeCache(dir: string, cachePath: string, script: vm.Script): void {
  const temp = `${cachePath}.${process.pid}-${Math.random().toString(36).slice(2)}.tmp`;
  try {
    writeFileSync(temp, script.createCachedData(), { mode: 0o600, flag: 'wx' });
    renameSync(temp, cachePath);
    pruneOldest(dir);
  } catch {
    rmSync(temp, { force: true });
  }
}

/** A temporary file older than this is left from a run killed while writing its cache. */
const STALE_TEMP_MS = 10 * 60 * 1000;

function pruneOldest(dir: string): void {
  const names = readdirSync(dir);
  for (const name of names.filter((n) => n.endsWith('.tmp'))) {
    try {
      if (Date.now() - statSync(join(dir, name)).mtimeMs > STALE_TEMP_MS) rmSync(join(dir, name), { force: true });
    } catch {
      // Gone already, or another run's.
    }
  }
  const files = names
    .filter((name) => name.endsWith('.bin'))
    .map((name) => {
      try {
        return { path: join(dir, name), mtime: statSync(join(dir, name)).mtimeMs };
      } catch {
        return undefined;
      }
    })
    .filter((f) => f !== undefined)
    .sort((a, b) => b.mtime - a.mtime);
  for (const old of files.slice(MAX_CACHE_FILES)) rmSync(old.path, { force: true });
}
