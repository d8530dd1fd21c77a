import { Option, type Command } from 'commander';
import type { CliIo } from '../io.js';
import type { Handler } from '../main.js';
import { chosenFormat } from './options.js';

interface Flags {
  readonly format?: 'text' | 'json';
  readonly json?: boolean;
  readonly color?: boolean;
}

const HELP = `
Reports what the IPU bridge (popef run --plugin ipu, popef import, popef
export, and reading SDK-written files for dump, config, scaffold, validate
and diff) would find on this machine: the Python interpreter (POPEF_PYTHON,
default python3), whether numpy and the Poplar SDK's modules popef and
model_runtime import, the SDK release, every SDK call the bridge makes
(src/run/bridge/SDK-API.md) present or absent, and for each operation
(dump/read, run, import, export) whether it can proceed, for a model
without feed blobs and for any model. A call whose Python spelling is
inferred from the SDK's C++ API is listed as unverified, not missing, when
absent. Also the IPUs that Graphcore's gc-info lists. Run it in the shell
where the SDK is enabled, and send its --json output with any bug report
about the IPU plugin.

Exit codes: 0 reading files and running models without feeds can proceed
(other operations may still be limited: see the list), 1 they cannot (the
problems are listed), 2 usage errors.`;

export function registerDoctor(program: Command, io: CliIo, run: (handler: Handler) => void): void {
  program
    .command('doctor')
    .description("check that this machine's Poplar SDK has what the IPU bridge needs")
    .addOption(new Option('--format <format>', 'text, or json: one document (schemas/doctor.schema.json)').choices(['text', 'json']))
    .option('--json', 'the same as --format json')
    .addOption(new Option('--no-color', 'disable colour (also honours NO_COLOR and FORCE_COLOR)'))
    .addHelpText('after', HELP)
    .action((flags: Flags) => {
      run(async () => {
        const { ipuPlugin } = await import('../../run/load-plugin.js');
        const { diagnose } = await import('../../run/sdk-doctor.js');
        const { VERSION } = await import('../../version.js');
        const python = io.env.POPEF_PYTHON ?? 'python3';
        const bridge = ipuPlugin({ cwd: io.cwd, env: io.env, signal: io.signal, requestTimeoutMs: 30_000, host: `popef-toolkit ${VERSION}` });
        try {
          const report = await diagnose(bridge, python, io.env);
          if (chosenFormat(flags, 'text') === 'json') io.stdout(`${JSON.stringify(report, null, 2)}\n`);
          else {
            const { renderDoctorText } = await import('../../present/doctor-report.js');
            const { chooseColour } = await import('../../present/colour.js');
            io.stdout(renderDoctorText(report, await chooseColour({ flag: flags.color, env: io.env, isTTY: io.stdoutIsTTY })));
          }
          return report.problems.length === 0 ? 0 : 1;
        } finally {
          await bridge.dispose();
        }
      });
    });
}
