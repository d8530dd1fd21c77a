import { Option, type Command } from 'commander';
import type { CliIo } from '../io.js';
import type { Handler } from '../main.js';
import { parseBoolOption, parseIntOption } from './options.js';

export interface ServeFlags {
  readonly host: string;
  readonly httpPort: number;
  readonly grpcPort: number;
  readonly http: boolean;
  readonly grpc: boolean;
  readonly metricsPort: number;
  readonly allowMetrics: boolean;
  readonly plugin: string;
  readonly pluginOption?: string[];
  readonly reference?: string;
  readonly referenceMap?: string[];
  readonly model?: string[];
  readonly jsonLogs?: boolean;
  readonly logVerbose?: number;
  readonly logInfo: boolean;
  readonly logWarning: boolean;
  readonly logError: boolean;
  readonly logFormat: 'default' | 'ISO8601';
  readonly logFile?: string;
  readonly maxRequestSize: number;
  readonly maxBuffered?: number;
  readonly timeout: string;
  readonly modelControlMode: 'none' | 'poll' | 'explicit';
  readonly loadModel?: string[];
  readonly repositoryPollSecs: number;
  readonly asTriton?: boolean;
}

const collect = (value: string, previous?: string[]): string[] => [...(previous ?? []), value];

const HELP = `
Serves the Poplar models of one or more Triton model repositories behind
Triton's own inference protocol (KServe v2 with Triton's extensions), over
HTTP/REST and gRPC, so that tritonclient code runs unchanged against it.
Models run on an execution plugin (cpu: the model's source ONNX graph;
ipu: Graphcore's Model Runtime), as with popef run.

Each model is validated on load with popef validate's Triton rules: a model
with errors is listed UNAVAILABLE with Triton's message as the reason, and
the others serve. The server is ready once every model is loaded or refused.
Client tensor names go through name_map.json; requests are checked with
Triton's request-time rules and messages.

Streaming (ModelStreamInfer), system shared memory (CUDA shared memory
answers as Triton's GPU build on a host without GPUs) and model control
(--model-control-mode, as Triton's) are served over both protocols.

Log settings (GET/POST /v2/logging, gRPC LogSettings) report and change
the --log-* options at run time; the server writes only what they allow.
Trace settings (/v2/trace/setting, per model /v2/models/M/trace/setting,
gRPC TraceSetting) are kept and reported as Triton's; no trace is written,
so, as Triton without a trace file, any level but OFF is refused.

Prometheus metrics (Triton's nv_* families) are served at /metrics on
--metrics-port unless --allow-metrics=false.

Ctrl-C or SIGTERM stops accepting requests, closes idle and half-sent
connections at once, lets running requests finish (answered with
Connection: close), closes the plugins and exits 0.

Exit codes: 0 stopped by a signal after draining, 2 usage errors, a port in
use, or a plugin that cannot run here.`;

export function registerServe(program: Command, io: CliIo, run: (handler: Handler) => void): void {
  program
    .command('serve')
    .description("serve model repositories over Triton's HTTP and gRPC inference protocol, on an execution plugin")
    .argument('<repository...>', 'Triton model repositories (directories holding MODEL/config.pbtxt)')
    .option('--host <address>', 'address to listen on', '127.0.0.1')
    .addOption(new Option('--http-port <port>', 'HTTP/REST port (0: any free port)').argParser(parseIntOption(0, 65535)).default(8000))
    .addOption(new Option('--grpc-port <port>', 'gRPC port (0: any free port)').argParser(parseIntOption(0, 65535)).default(8001))
    .option('--no-http', 'do not serve HTTP/REST')
    .option('--no-grpc', 'do not serve gRPC')
    .addOption(new Option('--metrics-port <port>', 'Prometheus metrics port (0: any free port)').argParser(parseIntOption(0, 65535)).default(8002))
    .addOption(
      new Option('--allow-metrics <bool>', 'serve Prometheus metrics at /metrics on --metrics-port, as tritonserver does')
        .argParser(parseBoolOption)
        .default(true),
    )
    .option('--plugin <plugin>', 'execution plugin: cpu, ipu, ./plugin.js, ./plugin-program, or a package', 'cpu')
    .option('--plugin-option <key=value>', 'an option passed to the plugin (repeatable)', collect)
    .option(
      '--reference <model.onnx>',
      'cpu plugin: the source ONNX graph of a model without an opaque blob named "onnx" (used for every served model: pair it with --model)',
    )
    .option('--reference-map <anchor=name>', 'cpu plugin: the ONNX graph name of an anchor whose names differ (repeatable)', collect)
    .option('--model <name>', 'serve only this model (repeatable; default: every model)', collect)
    .option('--json-logs', 'write log records as JSON lines (and, unless --log-verbose is given, one per request)')
    .addOption(
      new Option('--log-verbose <level>', "as Triton's: 1 or more logs one record per request (default 0; 1 with --json-logs)").argParser(
        parseIntOption(0, 2 ** 31 - 1),
      ),
    )
    .addOption(new Option('--log-info <bool>', 'log informational records (models loaded)').argParser(parseBoolOption).default(true))
    .addOption(new Option('--log-warning <bool>', 'log warnings (an instance restarted)').argParser(parseBoolOption).default(true))
    .addOption(new Option('--log-error <bool>', 'log errors (a model unavailable, an instance given up)').argParser(parseBoolOption).default(true))
    .addOption(
      new Option('--log-format <format>', 'default, or ISO8601 (each record starts with its UTC time and severity)')
        .choices(['default', 'ISO8601'])
        .default('default'),
    )
    .option('--log-file <path>', 'append log records to this file instead of standard error (not changeable over the network, as in Triton)')
    .addOption(
      new Option('--max-request-size <bytes>', 'largest request body accepted')
        .argParser(parseIntOption(1024, 2 ** 31 - 1))
        .default(64 * 1024 * 1024),
    )
    .addOption(
      new Option(
        '--max-buffered <bytes>',
        'most bytes of request bodies held at once, across all requests, HTTP and gRPC (default: 8 x --max-request-size, at most 1 GiB); beyond it a request is answered 503 (gRPC: RESOURCE_EXHAUSTED)',
      ).argParser(parseIntOption(1024, Number.MAX_SAFE_INTEGER)),
    )
    .option('--timeout <seconds>', 'how long the plugin may take to open a model or run a request', '300')
    .addOption(
      new Option(
        '--model-control-mode <mode>',
        "as Triton's: none (load all, no load/unload), explicit (load/unload by clients), poll (reload on change)",
      )
        .choices(['none', 'poll', 'explicit'])
        .default('none'),
    )
    .option('--load-model <name>', "explicit mode: a model to load at start (repeatable; '*' for all)", collect)
    .addOption(
      new Option('--repository-poll-secs <seconds>', 'poll mode: seconds between polls of the repositories')
        .argParser(parseIntOption(1, 86400))
        .default(15),
    )
    .option('--as-triton', "server metadata names Triton's release (triton 2.51.0), for clients that check the server's name or version")
    .addHelpText('after', HELP)
    .action((repositories: string[], flags: ServeFlags) => {
      run(async () => {
        const { serveCommand } = await import('./serve-command.js');
        return serveCommand(repositories, flags, io);
      });
    });
}
