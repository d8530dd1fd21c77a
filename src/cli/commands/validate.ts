import { Option, type Command } from 'commander';
import { resolve } from 'node:path';
import { ErrorCode, PopefError } from '../../errors.js';
import { isDirectorySync } from '../../io/local-file.js';
import { ExitCode } from '../exit-codes.js';
import { writeJson, type CliIo } from '../io.js';
import type { Handler } from '../main.js';
import { MAX_FINDINGS_PER_RULE } from '../../triton/repository/finding-limit.js';
import { DEFAULT_TRITON_VERSION } from '../../triton/triton-release.js';
import { deferOptimizingCompiler } from '../optimizer-deferral.js';
import { checkTritonVersion, chosenFormat } from './options.js';

interface Flags {
  readonly format?: 'text' | 'json' | 'junit' | 'sarif' | 'github' | 'html';
  readonly json?: boolean;
  readonly strict?: boolean;
  readonly verbose?: boolean;
  readonly requirePopef?: boolean;
  readonly verify?: boolean;
  readonly tritonVersion: string;
  readonly model?: string[];
  readonly backendDirectory?: string;
  readonly maxFindingsPerRule: string;
  readonly color?: boolean;
}

const HELP = `
Checks, without a server, an IPU or the Poplar SDK: the repository layout
(config.pbtxt, numeric version directories, the version policy, a .popef and
a name_map.json in each served version of a poplar model), Triton's config
rules with Triton's own messages, the name map, and the config against the
PopEF anchors (headers and metadata only). Every finding has a rule id, a
file and, where it applies, a line:column.

A version with no PopEF file, or with one not in the open layout (as every
export of the Poplar SDK is), gets every other rule and one notice
(popef/not-cross-checked): its anchors were not compared. A description
committed beside the file (FILE.json, written by popef describe) is
cross-checked instead; where the Poplar SDK is enabled (see popef doctor),
an SDK-written file is read through it and cross-checked. --require-popef
makes the notice an error.

A defect that makes others follow (no name_map.json, a config that does
not parse, a PopEF that cannot be read) is reported once, as the cause: the
findings of this tool's own rules that only follow from it are folded into
it ("and 4 findings that follow from it"), listed with --verbose, nested
under it in JSON, its related locations in SARIF; JUnit shows the rules
that could not run as skipped, with the reason. Triton's own messages are
never folded. The summary counts causes; exit codes are the same.

Exit codes: 0 no errors (warnings allowed unless --strict), 1 findings,
2 usage or I/O errors.`;

export function registerValidate(program: Command, io: CliIo, run: (handler: Handler) => void): void {
  program
    .command('validate')
    .description("check Triton model repositories offline, with Triton's rules and messages (exit 1 on errors)")
    .argument('<repository...>', 'model repositories (the directories given to tritonserver --model-repository)')
    .addOption(new Option('--format <format>', 'output format').choices(['text', 'json', 'junit', 'sarif', 'github', 'html']))
    .option('--json', 'the same as --format json')
    .option('--strict', 'treat warnings as errors')
    .option('--verbose', 'list under each cause the findings that follow from it (text; other formats always carry them)')
    .option('--verify', "check a PopEF description's SHA-256 against the file beside it, not only its size (reads the whole file)")
    .option('--require-popef', 'a deployment gate: a served poplar version with no PopEF, or one that cannot be cross-checked here, is an error')
    .option('--triton-version <version>', 'the Triton release to check fields against (YY.MM, or latest)', DEFAULT_TRITON_VERSION)
    .option('--model <name>', 'check only this model directory (repeatable)', (v: string, prev?: string[]) => [...(prev ?? []), v])
    .option('--backend-directory <dir>', 'also check that each backend library exists there (<dir>/<backend>/libtriton_<backend>.so)')
    .option(
      '--max-findings-per-rule <n>',
      'findings of one rule listed per model, the rest counted in one closing finding (a number, or all)',
      String(MAX_FINDINGS_PER_RULE),
    )
    .option('--no-color', 'disable colour (also honours NO_COLOR and FORCE_COLOR)')
    .addHelpText('after', HELP)
    .action((repositories: string[], flags: Flags) => {
      run(async () => {
        const { validateRepositoryWith, summarizeFindings } = await import('../../triton/repository/validate.js');
        const { newValidateWorker } = await import('../../triton/repository/model-pool.js');
        const present = await import('../../present/validate-report.js');
        const { withPrintableStrings } = await import('../../present/printable.js');
        const { VERSION } = await import('../../version.js');
        checkTritonVersion(flags.tritonVersion);
        const perRule = flags.maxFindingsPerRule === 'all' ? Infinity : Number(flags.maxFindingsPerRule);
        if (!(perRule >= 1) || (perRule !== Infinity && !Number.isInteger(perRule))) {
          // Through the one error funnel, as every other bad option value.
          throw new PopefError(ErrorCode.Usage, `--max-findings-per-rule "${flags.maxFindingsPerRule}" is not a positive whole number or all`, {
            suggestion: 'give a number of findings, or all',
          });
        }
        const backendDirectory = flags.backendDirectory === undefined ? undefined : resolve(io.cwd, flags.backendDirectory);
        // A mistyped directory would otherwise read as every backend library missing from it.
        if (backendDirectory !== undefined && !isDirectorySync(backendDirectory)) {
          throw new PopefError(ErrorCode.Usage, `--backend-directory ${flags.backendDirectory ?? ''} is not a directory`, {
            file: backendDirectory,
            suggestion:
              'give the directory passed to tritonserver --backend-directory (it holds <backend>/libtriton_<backend>.so), or leave the option out',
          });
        }
        const { sdkPopefReader } = await import('./foreign-popef.js');
        // One reader for the run, with one bridge: it finds out once whether the SDK is there.
        const foreign = sdkPopefReader(io);
        const reports = [];
        // Small repositories are checked without V8's optimizing compiler (optimizer-deferral.ts says why).
        const turbofanHandoff = io.earlyWorkers?.turbofanHandoff;
        const deferral = deferOptimizingCompiler(turbofanHandoff === undefined ? {} : { turbofanHandoff });
        try {
          for (const repository of repositories) {
            reports.push(
              await validateRepositoryWith(
                resolve(io.cwd, repository),
                {
                  tritonVersion: flags.tritonVersion,
                  strict: flags.strict,
                  requirePopef: flags.requirePopef,
                  verify: flags.verify,
                  maxFindingsPerRule: perRule,
                  models: flags.model,
                  backendDirectory,
                  readForeignPopef: foreign.read,
                  threads: deferral.threadsFor,
                },
                // The workers bin/popef.cjs started as the process started, then the pool's own.
                { newWorker: () => io.earlyWorkers?.take() ?? newValidateWorker() },
              ),
            );
          }
        } finally {
          io.earlyWorkers?.dispose();
          deferral.end();
          await foreign.dispose();
        }
        const result = {
          reports,
          shownRoots: repositories,
          tritonVersion: flags.tritonVersion,
          strict: flags.strict === true,
          toolVersion: VERSION,
          verbose: flags.verbose === true,
        };
        switch (chosenFormat(flags, 'text')) {
          case 'json':
            writeJson(io, present.validateJson(result));
            break;
          case 'junit':
            io.stdout(present.renderJunit(result));
            break;
          case 'sarif':
            writeJson(io, present.validateSarif(result));
            break;
          case 'github':
            io.stdout(present.renderGithub(withPrintableStrings(result)));
            break;
          case 'html': {
            const { renderValidateHtml } = await import('../../present/validate-html.js');
            io.stdout(renderValidateHtml(result));
            break;
          }
          default: {
            const { chooseColour } = await import('../../present/colour.js');
            io.stdout(
              present.renderValidateText(withPrintableStrings(result), await chooseColour({ flag: flags.color, env: io.env, isTTY: io.stdoutIsTTY })),
            );
          }
        }
        return summarizeFindings(reports).errors > 0 ? ExitCode.Findings : ExitCode.Ok;
      });
    });
}
