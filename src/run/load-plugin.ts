import { existsSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ErrorCode, PopefError } from '../errors.js';
import { packageRoot } from '../package-root.js';
import { ChildProcessPlugin } from './child-plugin.js';
import { CpuPlugin } from './cpu-plugin.js';
import { guardPlugin } from './guarded-plugin.js';
import type { ExecutionPlugin } from './plugin-api.js';
import { importModule } from './import-module.js';

/** Where a plugin runs: the directory and environment it sees, its cancellation, its limits. */
export interface PluginContext {
  readonly cwd: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly signal?: AbortSignal;
  readonly requestTimeoutMs?: number;
  readonly host?: string;
  /** The server of the `triton` plugin (grpc://HOST:PORT or http://HOST:PORT). */
  readonly url?: string;
}

/** The IPU bridge script, shipped with the package. */
export function ipuBridgePath(): string {
  return join(packageRoot(), 'src/run/bridge/ipu_bridge.py');
}

/**
 * The built-in `ipu` plugin: the bridge to Graphcore's Model Runtime, run
 * with POPEF_PYTHON (default python3), the interpreter where the Poplar
 * SDK's Python modules are enabled.
 */
export function ipuPlugin(ctx: PluginContext): ChildProcessPlugin {
  return new ChildProcessPlugin({
    name: 'ipu',
    command: ctx.env.POPEF_PYTHON ?? 'python3',
    args: ['-u', '-B', ipuBridgePath()],
    env: ctx.env,
    signal: ctx.signal,
    requestTimeoutMs: ctx.requestTimeoutMs,
    host: ctx.host,
  });
}

function isPluginObject(value: unknown): value is ExecutionPlugin {
  const p = value as Partial<ExecutionPlugin> | null;
  return (
    typeof p === 'object' &&
    p !== null &&
    typeof p.probe === 'function' &&
    typeof p.open === 'function' &&
    typeof p.dispose === 'function' &&
    typeof p.name === 'string'
  );
}

/**
 * Resolves --plugin: `ipu`, `cpu`, `triton` (a running server, ctx.url); a path to an ES module (.js/.mjs) exporting a
 * plugin (default export, or createPlugin()); a path to an executable,
 * run as an out-of-process plugin; or a package name exporting a plugin.
 */
export async function loadPlugin(spec: string, ctx: PluginContext): Promise<ExecutionPlugin> {
  const found = await findPlugin(spec, ctx);
  const inProcess = !(found instanceof ChildProcessPlugin);
  return guardPlugin(found, {
    signal: ctx.signal,
    ...(inProcess && ctx.requestTimeoutMs !== undefined ? { timeoutMs: ctx.requestTimeoutMs } : {}),
    // The built-in plugins are ours, and a child process cannot end ours: only a loaded module's steps need the exit trap.
    trapExit: inProcess && !BUILT_IN.has(spec),
  });
}

/** The plugins of this package, by --plugin name: one table, for finding them and for knowing them as ours. */
type PluginFactory = (ctx: PluginContext) => ExecutionPlugin | Promise<ExecutionPlugin>;
const BUILT_IN: ReadonlyMap<string, PluginFactory> = new Map<string, PluginFactory>([
  ['ipu', ipuPlugin],
  // POPEF_ONNXRUNTIME_MODULE names another module to import (tests use it to simulate a missing onnxruntime-node).
  ['cpu', (ctx: PluginContext) => new CpuPlugin({ moduleName: ctx.env.POPEF_ONNXRUNTIME_MODULE })],
  [
    'triton',
    async (ctx: PluginContext) => {
      // Imported when asked for: it brings @grpc/grpc-js and protobufjs, a hundred files popef run --plugin cpu has no use for.
      const { TritonPlugin } = await import('./triton-plugin.js');
      return new TritonPlugin({ url: ctx.url, timeoutMs: ctx.requestTimeoutMs });
    },
  ],
]);

async function findPlugin(spec: string, ctx: PluginContext): Promise<ExecutionPlugin> {
  const builtIn = BUILT_IN.get(spec);
  if (builtIn !== undefined) return builtIn(ctx);
  const looksLikePath = spec.startsWith('.') || spec.startsWith('/') || spec.includes('\\');
  const path = resolve(ctx.cwd, spec);
  if (looksLikePath && !existsSync(path)) {
    throw new PopefError(ErrorCode.InvalidInput, `plugin ${spec} does not exist`, {
      file: path,
      suggestion: 'give a path to a plugin module or program, or ipu',
    });
  }
  if (looksLikePath && !/\.(m?js)$/.test(path)) {
    const mode = statSync(path).mode;
    if ((mode & 0o111) === 0) {
      throw new PopefError(ErrorCode.InvalidInput, `plugin ${spec} is neither an ES module (.js, .mjs) nor an executable program`, {
        file: path,
        suggestion: 'chmod +x it, or give a .js/.mjs module',
      });
    }
    return new ChildProcessPlugin({
      name: spec,
      command: path,
      env: ctx.env,
      signal: ctx.signal,
      requestTimeoutMs: ctx.requestTimeoutMs,
      host: ctx.host,
    });
  }
  let module: Record<string, unknown>;
  try {
    module = (await importModule(looksLikePath ? pathToFileURL(path).href : spec)) as Record<string, unknown>;
  } catch (error) {
    // A bare name that is no package: most likely a built-in plugin's name mistyped (--plugin gpu), so name them.
    if (!looksLikePath && (error as NodeJS.ErrnoException).code === 'ERR_MODULE_NOT_FOUND' && (error as Error).message.includes(`'${spec}'`)) {
      throw new PopefError(
        ErrorCode.InvalidInput,
        `no plugin named ${spec}: it is neither a built-in plugin (${[...BUILT_IN.keys()].join(', ')}) nor an installed package`,
        {
          suggestion: `give --plugin ${[...BUILT_IN.keys()].join('|')}, a path to a plugin module (.js, .mjs) or program, or an installed package's name`,
        },
      );
    }
    throw new PopefError(ErrorCode.InvalidInput, `cannot load plugin ${spec}: ${(error as Error).message}`, {
      suggestion: 'give a path to an ES module, or an installed package name',
    });
  }
  const candidate = typeof module.createPlugin === 'function' ? await (module.createPlugin as () => unknown)() : module.default;
  const plugin = typeof candidate === 'function' ? await (candidate as () => unknown)() : candidate;
  if (!isPluginObject(plugin)) {
    throw new PopefError(ErrorCode.InvalidInput, `plugin ${spec} exports no ExecutionPlugin (name, probe, open, dispose)`, {
      suggestion: 'export one as default, or a createPlugin() function',
    });
  }
  return plugin;
}
