import { resolve } from 'node:path';
import { loadPlugin } from '../../run/load-plugin.js';
import type { ExecutionPlugin } from '../../run/plugin-api.js';
import { startServer } from '../../serve/server.js';
import { MIRRORED_TRITON } from '../../serve/inference-server.js';
import { VERSION } from '../../version.js';
import { ExitCode } from '../exit-codes.js';
import type { CliIo } from '../io.js';
import { pluginOptions, positiveSecondsMs, usage } from './options.js';
import { assertAvailable } from './plugin-choice.js';
import { ServeLog } from './serve-log.js';
import type { ServeFlags } from './serve.js';

export async function serveCommand(repositories: string[], flags: ServeFlags, io: CliIo): Promise<number> {
  const timeoutMs = positiveSecondsMs(flags.timeout, '--timeout');
  if (!flags.http && !flags.grpc) throw usage('--no-http and --no-grpc leave nothing to serve');
  if (flags.loadModel !== undefined && flags.modelControlMode !== 'explicit')
    throw usage('--load-model needs --model-control-mode explicit', 'in the other modes every model loads at start');
  const ports: [string, number][] = [
    ...(flags.http ? [['--http-port', flags.httpPort] as [string, number]] : []),
    ...(flags.grpc ? [['--grpc-port', flags.grpcPort] as [string, number]] : []),
    ...(flags.allowMetrics ? [['--metrics-port', flags.metricsPort] as [string, number]] : []),
  ];
  for (const [i, [flag, port]] of ports.entries()) {
    const other = ports.slice(i + 1).find(([, p]) => p === port && p !== 0);
    if (other !== undefined) throw usage(`${flag} and ${other[0]} are both ${port}`);
  }
  const options = pluginOptions(flags.pluginOption);
  if (flags.reference !== undefined) {
    if (Object.hasOwn(options, 'reference')) throw usage('--reference and --plugin-option reference=... both give the graph; keep one');
    options.reference = resolve(io.cwd, flags.reference);
  }
  for (const m of flags.referenceMap ?? []) {
    const at = m.indexOf('=');
    if (at <= 0) throw usage(`--reference-map "${m}" is not ANCHOR=NAME`);
    options[`map.${m.slice(0, at)}`] = m.slice(at + 1);
  }
  const createPlugin = (): Promise<ExecutionPlugin> =>
    loadPlugin(flags.plugin, { cwd: io.cwd, env: io.env, requestTimeoutMs: timeoutMs, host: `popef-toolkit ${VERSION}` });
  // A plugin that cannot run here fails the start, before any port is taken.
  const probe = await createPlugin();
  try {
    await assertAvailable(probe);
  } finally {
    await probe.dispose();
  }
  const log = new ServeLog(flags, io);
  const server = await startServer({
    repositories: repositories.map((r) => resolve(io.cwd, r)),
    createPlugin,
    pluginOptions: options,
    models: flags.model,
    host: flags.host,
    httpPort: flags.http ? flags.httpPort : undefined,
    grpcPort: flags.grpc ? flags.grpcPort : undefined,
    metricsPort: flags.allowMetrics ? flags.metricsPort : undefined,
    maxRequestSize: flags.maxRequestSize,
    ...(flags.maxBuffered === undefined ? {} : { maxBufferedBytes: flags.maxBuffered }),
    modelControl: { mode: flags.modelControlMode, loadModels: flags.loadModel, pollSeconds: flags.repositoryPollSecs },
    log: (entry) => log.request(entry),
    logSettings: log.settings,
    ...(flags.asTriton === true ? { identity: MIRRORED_TRITON } : {}),
    onInstanceEvent: (e) => log.instance(e),
    onModel: (m) => log.model(m),
    onRepositoryFinding: (root, f) => log.repositoryFinding(root, f),
  }).catch((error: unknown) => {
    log.close();
    throw error;
  });
  const where = [...server.ports].map(([name, port]) => `${name} on ${flags.host}:${port}`).join(', ');
  const models = server.core.index();
  const ready = models.filter((m) => m.state === 'READY').length;
  // Draining may take as long as the slowest running request; Triton waits up to 30 s (--exit-timeout-secs).
  io.setStopGrace?.(30_000);
  io.stderr(`popef serve: ready: ${ready} of ${models.length} models, ${where}; Ctrl-C stops\n`);
  await new Promise<void>((done) => {
    if (io.signal.aborted) done();
    else io.signal.addEventListener('abort', () => done(), { once: true });
  });
  io.stderr('popef serve: stopping: finishing the running requests\n');
  await server.stop();
  log.close();
  io.stderr('popef serve: stopped\n');
  io.signalIsNormalStop?.();
  return ExitCode.Ok;
}
