import { Option, type Command } from 'commander';
import type { CliIo } from '../io.js';
import type { Handler } from '../main.js';
import { chosenFormat, parseIntOption } from './options.js';

export interface RunFlags {
  readonly plugin?: string;
  readonly pluginOption?: string[];
  readonly executable?: string;
  readonly version?: number;
  readonly input?: string[];
  readonly random?: boolean;
  readonly seed: number;
  readonly range?: string;
  readonly scale?: string;
  readonly mean?: string;
  readonly std?: string;
  readonly topK?: number;
  readonly saveOutputs?: string;
  readonly force?: boolean;
  readonly json?: boolean;
  readonly format?: 'text' | 'json';
  readonly warmup: number;
  readonly iterations: number;
  readonly duration?: string;
  readonly expect?: string;
  readonly atol?: string[];
  readonly rtol?: string[];
  readonly timeout: string;
  readonly reference?: string;
  readonly referenceMap?: string[];
  readonly compareWith?: string;
  readonly color?: boolean;
  readonly url?: string;
}

const collect = (value: string, previous?: string[]): string[] => [...(previous ?? []), value];

const HELP = `
<model> is one or more PopEF open-layout files, or a model directory of a
Triton repository (MODEL/config.pbtxt with MODEL/N/executable.popef); then
the highest version its version_policy selects (or --version N) is run and name_map.json gives the
client-facing names, as the server would use them.

Inputs: --input NAME=FILE with .npy, .json (nested arrays or {"shape", "data"}),
.bin (raw little-endian, exact size) or .png (grayscale or RGB; float inputs
get pixels / 255, then (x - mean) / std). --random fills every input not
given with seeded random data (--seed, --range LOW,HIGH). Every input is
checked against the dtype and shape the model expects before anything runs.

Comparison: --expect DIR (NAME.npy per output) or FILE.npy (one output);
an element passes when |actual - expected| <= atol + rtol * |expected|.
--atol/--rtol take a value for all outputs or NAME=VALUE for one. The report
gives the error statistics and the smallest atol and rtol that would pass.

--compare-with PLUGIN runs the same inputs through a second plugin (the cpu
reference, typically) and compares its outputs with the first plugin's,
with the same tolerances: the check that IPU results match the source model.
With --plugin triton --url grpc://HOST:8001 the model runs on a live Triton
server (or popef serve): a deployed model checked against its source graph.

Without --plugin, popef run says on standard error which plugin it chose:
triton when --url is given, ipu when the Poplar SDK is found, else cpu when
the model carries its ONNX graph (or --reference gives it), else ipu, whose
refusal says what is missing.

Plugins: ipu (Graphcore's Model Runtime through the Poplar SDK's Python
modules; set POPEF_PYTHON to the SDK's interpreter), cpu (the model's source
ONNX graph on onnxruntime-node, an optional dependency: the graph comes from
--reference or from the model's opaque blob named "onnx"), triton (a running
inference server speaking Triton's protocol, --url; the model directory's
name is the model name, name_map.json gives the tensor names), a path to an ES module
(.js, .mjs) or to an executable speaking the protocol of
src/run/PROTOCOL.md, or a package name.

Exit codes: 0 ok, 1 outputs differ from --expect, 2 usage, input or plugin
errors, 128+n when the plugin process dies by signal n.`;

export function registerRun(program: Command, io: CliIo, run: (handler: Handler) => void): void {
  program
    .command('run')
    .description('run a model once (or many times, timed) through an execution plugin, with inputs from files')
    .argument('<model...>', 'PopEF files, or a Triton model directory')
    .option(
      '--plugin <plugin>',
      'execution plugin: ipu, cpu, triton, ./plugin.js, ./plugin-program, or a package (default: ipu where the Poplar SDK is found, else cpu when the model has its ONNX graph; triton with --url)',
    )
    .option('--url <url>', 'triton plugin: the inference server, grpc://HOST:PORT or http://HOST:PORT (Triton, or popef serve)')
    .option('--plugin-option <key=value>', 'an option passed to the plugin (repeatable)', collect)
    .option('--executable <name>', 'the model to run when the files hold several')
    .addOption(
      new Option('--version <n>', 'version directory of a Triton model directory (default: the highest the version policy selects)').argParser(
        parseIntOption(0, Number.MAX_SAFE_INTEGER),
      ),
    )
    .option('-i, --input <name=file>', 'an input from a file (repeatable)', collect)
    .option('--random', 'fill inputs not given with seeded random data')
    .addOption(new Option('--seed <n>', 'seed of --random').argParser(parseIntOption(0, 2 ** 32 - 1)).default(0))
    .option('--range <low,high>', 'range of --random values')
    .option('--scale <x>', 'PNG: multiplier for 0..255 pixels of float inputs (default: 1/255)')
    .option('--mean <m[,m,m]>', 'PNG: mean subtracted after scaling, per channel')
    .option('--std <s[,s,s]>', 'PNG: standard deviation divided by after the mean, per channel')
    .addOption(new Option('--top-k <k>', 'show the k largest values of each output row (classifiers)').argParser(parseIntOption(1, 1000)))
    .option('--save-outputs <dir>', 'write each output as DIR/NAME.npy')
    .option('-f, --force', 'replace existing files in --save-outputs')
    .addOption(new Option('--format <format>', 'text, or json: one document (outputs, timings, comparison)').choices(['text', 'json']))
    .option('--json', 'the same as --format json')
    .addOption(new Option('--warmup <n>', 'untimed runs first').argParser(parseIntOption(0, 1_000_000)).default(0))
    .addOption(new Option('--iterations <n>', 'timed runs').argParser(parseIntOption(1, 100_000_000)).default(1))
    .option('--duration <seconds>', 'run for this long instead of --iterations')
    .option('--expect <dir|file.npy>', 'compare the outputs with saved ones (exit 1 on mismatch)')
    .option('--atol <value|name=value>', 'absolute tolerance for --expect (default: 1e-5; repeatable per output)', collect)
    .option('--rtol <value|name=value>', 'relative tolerance for --expect (default: 1e-3; repeatable per output)', collect)
    .option('--reference <model.onnx>', 'cpu plugin: the source ONNX graph (default: the model\'s opaque blob named "onnx")')
    .option('--reference-map <anchor=name>', 'cpu plugin: the ONNX graph name of an anchor whose names differ (repeatable)', collect)
    .option('--compare-with <plugin>', 'run the same inputs through a second plugin (e.g. cpu) and compare the outputs (exit 1 on mismatch)')
    .option('--timeout <seconds>', 'how long the plugin may take to open or run before it is stopped', '300')
    .option('--no-color', 'disable colour (also honours NO_COLOR and FORCE_COLOR)')
    .addHelpText('after', HELP)
    .action((model: string[], flags: RunFlags) => {
      run(async () => {
        const { runCommand } = await import('./run-command.js');
        return runCommand(model, { ...flags, json: chosenFormat(flags, 'text') === 'json' }, io);
      });
    });
}
