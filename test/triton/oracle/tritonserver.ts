// The real Triton server as a test oracle: finds the tritonserver binary
// that nvidia-pytriton bundles (installed by .ci/run into .venv), builds the
// stand-in backend, loads a whole model repository once and reports, model
// by model, whether Triton loaded it and, if not, Triton's own message.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, symlink } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { ROOT } from '../../helpers.js';

export interface TritonVerdict {
  readonly loaded: boolean;
  /** Triton's message (status-code prefix removed) when it refused the model. */
  readonly message?: string;
}

export interface TritonRun {
  readonly verdicts: ReadonlyMap<string, TritonVerdict>;
  readonly version: string;
}

/** The bundled server binary, or undefined when the virtual environment lacks it. */
export function findTritonServer(): string | undefined {
  const fromEnv = process.env.POPEF_TRITONSERVER;
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
  const lib = join(ROOT, '.venv', 'lib');
  if (!existsSync(lib)) return undefined;
  for (const python of readdirSync(lib)) {
    const bin = join(lib, python, 'site-packages', 'pytriton', 'tritonserver', 'bin', 'tritonserver');
    if (existsSync(bin)) return bin;
  }
  return undefined;
}

/**
 * Why the real server cannot be this machine's oracle: no tritonserver, or no
 * C compiler for the stand-in backend; undefined when it can.
 */
export function whyNoTritonOracle(binary: string | undefined): string | undefined {
  if (binary === undefined) return 'tritonserver is not installed (.ci/run installs nvidia-pytriton into .venv)';
  if (spawnSync('cc', ['--version']).status !== 0) return 'no C compiler for the stand-in backend';
  return undefined;
}

/**
 * Compiles the stand-in backend (or another C source, such as the QA tests'
 * computing one) as `<dir>/<name>/libtriton_<name>.so` for each backend name.
 */
export async function buildStandInBackends(
  dir: string,
  names: readonly string[],
  source = join(ROOT, 'test/triton/oracle/stand-in-backend.c'),
): Promise<void> {
  for (const name of names) {
    await mkdir(join(dir, name), { recursive: true });
    const out = join(dir, name, `libtriton_${name}.so`);
    const cc = spawnSync('cc', ['-shared', '-fPIC', '-O1', '-o', out, source], { encoding: 'utf8' });
    if (cc.status !== 0) throw new Error(`cc could not build the stand-in backend ${source}: ${cc.error?.message ?? cc.stderr}`);
  }
}

/**
 * Links the Python backend that nvidia-pytriton bundles into `<dir>/python`,
 * with the stub for the virtual environment's interpreter, and returns the
 * environment's site-packages (for models that import from it).
 */
export async function linkPythonBackend(dir: string): Promise<string> {
  const lib = join(ROOT, '.venv', 'lib');
  const version = readdirSync(lib).find((d) => d.startsWith('python')) ?? '';
  const site = join(lib, version, 'site-packages');
  const bundled = join(site, 'pytriton', 'tritonserver');
  await mkdir(join(dir, 'python'), { recursive: true });
  for (const f of ['libtriton_python.so', 'triton_python_backend_utils.py'])
    await symlink(join(bundled, 'backends', 'python', f), join(dir, 'python', f));
  // The stub for this interpreter; a link keeps its $ORIGIN-relative libraries found.
  await symlink(
    join(bundled, 'python_backend_stubs', version.replace('python', ''), 'triton_python_backend_stub'),
    join(dir, 'python', 'triton_python_backend_stub'),
  );
  return site;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => {
        resolve(port);
      });
    });
  });
}

const STATUS_PREFIX = /^(Invalid argument|Internal|Not found|Unavailable|Unsupported|Already exists|Unknown): /;

/** What tritonserver prints once the initial load of every model has ended (its HTTP service then listens). */
const READY_LINE = 'Started HTTPService';

/** Log lines are `E... file:line] "message"`, with the message's quotes and backslashes escaped. */
function unquote(s: string): string {
  return s.replace(/\\(.)/g, '$1');
}

/** tritonserver died by a signal before it was ready: a crash of the peer, not a verdict on the repository. */
export class TritonCrashed extends Error {
  constructor(
    readonly signal: string,
    log: string,
  ) {
    // The last lines first: they say where it died (a report that keeps only the head still shows them).
    const tail = log.trimEnd().split('\n').slice(-3).join('\n');
    super(
      `tritonserver exited with ${signal} before it was ready; its last lines:\n${tail}\n--- the log's last 4000 characters:\n${log.slice(-4000)}`,
    );
  }
}

export interface RunningTriton {
  readonly httpPort: number;
  readonly grpcPort: number;
  /** Where its metrics service listens (when started with --allow-metrics=true). */
  readonly metricsPort: number;
  /** The tritonserver process (its Python backend stubs are its children): what the serve benchmark reads CPU time of. */
  readonly pid: number;
  /**
   * Milliseconds from the spawn to the moment the ready line arrived on its
   * pipe (not when the poll below next looked): what the validate benchmark
   * times, as child-usage.py times validate from fork to exit.
   */
  readonly readyAfterMs: number;
  /** Everything the server printed so far. */
  log(): string;
  /** GET or POST on the server's HTTP port, retried while the port is not yet open. */
  ask(path: string, init?: RequestInit): Promise<Response>;
  stop(): Promise<void>;
}

/**
 * Starts tritonserver on the repository (every model loaded at start-up,
 * failures kept) and resolves once its HTTP service listens.
 */
export async function startTriton(
  binary: string,
  repository: string,
  backendDirectory: string,
  timeoutMs = 300_000,
  extraArgs: readonly string[] = [],
  /** How often the log is looked at for the ready line (the time of its arrival is noted as it comes: readyAfterMs). */
  pollMs = 100,
): Promise<RunningTriton> {
  const [http, grpc, metrics] = [await freePort(), await freePort(), await freePort()];
  const spawnedAt = process.hrtime.bigint();
  const child = spawn(
    binary,
    [
      `--model-repository=${repository}`,
      `--backend-directory=${backendDirectory}`,
      '--exit-on-error=false',
      '--strict-readiness=false',
      '--strict-model-config=false',
      `--http-port=${http}`,
      `--grpc-port=${grpc}`,
      `--metrics-port=${metrics}`,
      '--http-address=127.0.0.1',
      '--grpc-address=127.0.0.1',
      '--allow-metrics=false',
      '--log-verbose=0',
      ...extraArgs,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let log = '';
  let readyAt: bigint | undefined;
  // Each stream is searched on its own, in its newest chunk and the end of the one before (the line may be cut between
  // two): the whole log, searched at every chunk, would be quadratic in a long start.
  const taker = (): ((b: Buffer) => void) => {
    let tail = '';
    return (b: Buffer): void => {
      const text = b.toString();
      log += text;
      if (readyAt === undefined && (tail + text).includes(READY_LINE)) readyAt = process.hrtime.bigint();
      tail = (tail + text).slice(-READY_LINE.length);
    };
  };
  child.stdout.on('data', taker());
  child.stderr.on('data', taker());
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    child.kill('SIGKILL');
    await exited;
  };
  const deadline = Date.now() + timeoutMs;
  try {
    // The HTTP service starts once the initial load of every model has ended.
    while (readyAt === undefined) {
      if (child.signalCode !== null) throw new TritonCrashed(child.signalCode, log);
      if (child.exitCode !== null) throw new Error(`tritonserver exited with ${String(child.exitCode)} before it was ready:\n${log.slice(-4000)}`);
      if (Date.now() > deadline) throw new Error(`tritonserver did not start within ${timeoutMs} ms:\n${log.slice(-4000)}`);
      await new Promise((r) => setTimeout(r, pollMs));
    }
  } catch (error) {
    await stop();
    throw error;
  }
  const ask = async (path: string, init?: RequestInit): Promise<Response> => {
    for (;;) {
      try {
        return await fetch(`http://127.0.0.1:${http}${path}`, init);
      } catch (error) {
        if (child.exitCode !== null || child.signalCode !== null)
          throw new Error(`tritonserver ended (${child.exitCode ?? child.signalCode ?? ''}) after starting:\n${log.slice(-4000)}`);
        if (Date.now() > deadline) throw error;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  };
  const readyAfterMs = Number(readyAt - spawnedAt) / 1e6;
  return { httpPort: http, grpcPort: grpc, metricsPort: metrics, pid: child.pid ?? 0, readyAfterMs, log: () => log, ask, stop };
}

/**
 * Starts tritonserver on the repository, reads the repository index and
 * the log, stops it.
 */
export async function loadInTriton(binary: string, repository: string, backendDirectory: string, timeoutMs = 300_000): Promise<TritonRun> {
  const triton = await startTriton(binary, repository, backendDirectory, timeoutMs);
  try {
    const index = (await (await triton.ask('/v2/repository/index', { method: 'POST', body: '{}' })).json()) as {
      name: string;
      state?: string;
      reason?: string;
    }[];
    const version = ((await (await triton.ask('/v2')).json()) as { version: string }).version;
    const log = triton.log();
    const verdicts = new Map<string, TritonVerdict>();
    for (const m of index) {
      if (m.state === 'READY') verdicts.set(m.name, { loaded: true });
      else if (m.state !== undefined) verdicts.set(m.name, { loaded: false, message: (m.reason ?? '').replace(STATUS_PREFIX, '') });
    }
    // A model refused before it is loaded has no state; its reason is only in the log.
    const refuse = (name: string | undefined, message: string | undefined): void => {
      if (name !== undefined && verdicts.get(name)?.loaded !== true)
        verdicts.set(name, { loaded: false, message: unquote(message ?? '').replace(STATUS_PREFIX, '') });
    };
    for (const match of log.matchAll(/Poll failed for model directory '([^']*)': (.*)"$/gm)) refuse(match[1], match[2]);
    for (const match of log.matchAll(/failed to load model '([^']*)': (.*)"$/gm)) refuse(match[1], match[2]);
    // Dependency-graph failures of ensembles name the ensemble inside the message.
    for (const match of log.matchAll(/model_repository_manager\.cc:\d+\] "((?:[A-Za-z ]+: )?(?:in )?ensemble '?([^\s',]+)'?[ ,].*)"$/gm))
      refuse(match[2], match[1]);
    return { verdicts, version };
  } finally {
    await triton.stop();
  }
}

/**
 * loadInTriton, started again when the server crashes (TritonCrashed) before
 * it is ready, up to `attempts` starts: for a repository of one model that
 * makes tritonserver crash now and then (CorpusModel.alone). Any other
 * failure, and a crash on every start, still fails.
 */
export async function loadInTritonDespiteCrashes(
  binary: string,
  repository: string,
  backendDirectory: string,
  attempts = 8,
): Promise<TritonRun & { readonly crashes: number }> {
  for (let crashes = 0; ; crashes++) {
    try {
      return { ...(await loadInTriton(binary, repository, backendDirectory)), crashes };
    } catch (error) {
      if (!(error instanceof TritonCrashed) || crashes + 1 >= attempts) throw error;
    }
  }
}

/** Triton's release for a server version: 2.51.0 is 24.10 (the two advance together, one minor a month). */
export function releaseOf(serverVersion: string): string {
  const minor = Number(serverVersion.split('.')[1]);
  const months = minor - 51 + (24 * 12 + 10 - 1);
  return `${String(Math.floor(months / 12)).padStart(2, '0')}.${String((months % 12) + 1).padStart(2, '0')}`;
}
