import type { Command } from 'commander';
import { basename, join, relative, resolve } from 'node:path';
import { ExitCode } from '../exit-codes.js';
import { printable } from '../../present/printable.js';
import type { CliIo } from '../io.js';
import type { Handler } from '../main.js';
import { addConfigOptions, type ConfigFlags } from './config-flags.js';
import type { GeneratedFiles } from './config-generate.js';
import type { FileToDescribe } from './describe-run.js';
import { exitCodesHelp, parseIntOption } from './options.js';

interface Flags extends ConfigFlags {
  readonly repository: string;
  readonly model: string;
  readonly version: number;
  readonly link?: boolean;
  readonly dryRun?: boolean;
  readonly force?: boolean;
}

/** A path as a POSIX shell word: as it is when it has nothing special, else single-quoted. */
function shellQuote(path: string): string {
  return /^[A-Za-z0-9_./:@%+=,-]+$/.test(path) ? path : `'${path.replace(/'/g, "'\\''")}'`;
}

/**
 * The description placed beside the export: the one the model was scaffolded
 * from, or, for an SDK-written file the Poplar SDK read here, the one made
 * from that read (as popef describe writes it, naming the file
 * executable.popef), so that validate can cross-check the version on a
 * machine without the SDK.
 */
async function descriptionToPlace(generated: GeneratedFiles): Promise<{ text: string } | { copyFrom: string } | undefined> {
  if (generated.descriptionFile !== undefined) return { copyFrom: generated.descriptionFile };
  if (generated.sdkDescription === undefined) return undefined;
  const { descriptionText } = await import('./describe-run.js');
  return { text: descriptionText(generated.sdkDescription) };
}

/** The names a description of the placed files records: the executable's file becomes executable.popef. */
function placedNames(popefFiles: readonly string[]): FileToDescribe[] {
  return popefFiles.map((path, i) => ({ path, recordedName: i === 0 ? 'executable.popef' : basename(path) }));
}

/**
 * The closing hint's first way: popef serve runs the model's source ONNX
 * graph with the cpu plugin, which only a model that carries it (or a
 * --reference graph) gives, and which reads the open layout only: an
 * SDK-written export is converted first.
 */
function tryWithoutIpu(generated: GeneratedFiles, repository: string, model: string, cwd: string): string {
  const intro = "Try it without an IPU, behind Triton's protocol";
  if (generated.readBySdk) {
    const exported = generated.popefFiles[0];
    const file = exported === undefined ? 'FILE' : shellQuote(relative(cwd, exported) || exported);
    return `${intro}; the cpu plugin reads the PopEF open layout only, so convert the SDK's export and scaffold that:\n  popef import ${file} -o export.open.popef\n`;
  }
  if (generated.hasGraph === true) return `${intro} (the cpu plugin runs the model's ONNX graph):\n  popef serve ${repository}\n`;
  const why =
    generated.hasGraph === false
      ? 'the model carries no ONNX graph (no opaque blob named "onnx"), so give the cpu plugin the source graph'
      : 'the cpu plugin runs the PopEF\'s opaque blob named "onnx", or the source graph given';
  return `${intro}; ${why}:\n  popef serve ${repository} --model ${model} --reference model.onnx\n`;
}

/** "create model ..." -> "created model ...", for the line after the work is done. */
function pastTense(what: string): string {
  return what.replace(/^(create|add|replace)/, (verb) => (verb === 'add' ? 'added' : `${verb}d`));
}

export function registerScaffold(program: Command, io: CliIo, run: (handler: Handler) => void): void {
  const command = program
    .command('scaffold')
    .description('create a Triton model directory: config.pbtxt, VERSION/executable.popef and VERSION/name_map.json')
    .argument('<file...>', 'PopEF open-layout files of one model set (every file is placed)')
    .requiredOption('-r, --repository <dir>', 'the model repository (created if missing)')
    .requiredOption('-m, --model <name>', 'the model name: directory name and config name')
    .option('--version <n>', 'version directory', parseIntOption(1, Number.MAX_SAFE_INTEGER), 1)
    .option('--link', 'hard-link the PopEF files instead of copying them')
    .option('--dry-run', 'print what would be created, write nothing')
    .option('-f, --force', 'replace an existing version directory, and config.pbtxt when it does not match the new PopEF (other versions are kept)');
  addConfigOptions(command);
  command.addHelpText(
    'after',
    exitCodesHelp(
      '0 created (or --dry-run), 2 usage, input or I/O errors (an existing version, or a config.pbtxt that does not match, without --force); nothing is left half-written.',
    ),
  );
  command.addHelpText(
    'after',
    '\nA new --version beside existing ones keeps config.pbtxt as it is when it already describes the new PopEF\n' +
      '(same name, backend, max_batch_size, inputs and outputs; comments, layout and your other fields do not count).\n',
  );
  command.action((files: string[], flags: Flags) => {
    run(async () => {
      const { generateFiles } = await import('./config-generate.js');
      const { ConfigMismatchError, applyScaffold, checkModelName, finishInterruptedScaffold, planScaffold } =
        await import('../../triton/scaffold.js');
      checkModelName(flags.model);
      const generated = await generateFiles(files, flags, flags.model, io, { describeAs: placedNames });
      if (generated.modelCount > 1) {
        // Every file is placed in the version directory, and the backend serves one model from it.
        const { ErrorCode, PopefError } = await import('../../errors.js');
        throw new PopefError(
          ErrorCode.InvalidInput,
          `the files hold ${generated.modelCount} models; a version directory of the Poplar backend serves one`,
          {
            suggestion: 'write each model to a file of its own (popef unpack, edit the manifest, popef pack), then scaffold it',
          },
        );
      }
      // Validate's name rules, said before anything is written: the user can rename now (--name, --model).
      const { unsafeNames } = await import('../../triton/repository/own-rules.js');
      for (const f of unsafeNames(generated.config, flags.model))
        io.stderr(`popef: warning: ${printable(f.message, true)} [${f.rule}]\n  hint: ${f.hint ?? ''}\n`);
      const description = await descriptionToPlace(generated);
      const repository = resolve(io.cwd, flags.repository);
      if (flags.dryRun !== true) {
        // A killed earlier run is finished first, so that this one plans against a whole model.
        for (const line of await finishInterruptedScaffold(join(repository, flags.model)))
          io.stderr(`popef: note: ${printable(join(flags.repository, flags.model), true)}: ${line}\n`);
      }
      const plan = await planScaffold(
        repository,
        flags.model,
        flags.version,
        {
          config: generated.pbtxt,
          nameMap: generated.nameMapText,
          popefFiles: generated.popefFiles,
          ...(description === undefined ? {} : { description }),
        },
        { force: flags.force },
      ).catch(async (error: unknown) => {
        if (!(error instanceof ConfigMismatchError)) throw error;
        // The library's hint speaks of force: true; here the ways out are the flag and the command that prints the config needed.
        const { PopefError } = await import('../../errors.js');
        throw new PopefError(error.code, error.message, {
          file: error.file,
          suggestion:
            'edit config.pbtxt to match (popef config, given the same files and options, prints the one needed), or pass --force to replace config.pbtxt (other versions are kept, and are then served with the new config)',
          cause: error,
        });
      });
      const shown = (path: string): string => join(flags.repository, relative(repository, path));
      const configShown = shown(join(plan.modelDir, 'config.pbtxt'));
      // Said once the outcome is known (or planned, with --dry-run): they describe the model as it ends.
      const printNotes = (): void => {
        for (const note of plan.notes) io.stderr(`popef: note: ${printable(configShown, true)}: ${note.message}\n  hint: ${note.hint}\n`);
      };
      const lines = plan.files.map((f) => {
        const how =
          'text' in f.content
            ? 'write'
            : flags.link === true
              ? `link  ${relative(io.cwd, f.content.copyFrom) || f.content.copyFrom} ->`
              : `copy  ${relative(io.cwd, f.content.copyFrom) || f.content.copyFrom} ->`;
        return `  ${how} ${shown(join(plan.modelDir, f.path))}`;
      });
      if (plan.keepsConfig) lines.unshift(`  keep  ${configShown} (unchanged: it already describes this PopEF)`);
      const what = plan.keepsConfig
        ? `${plan.replaces.length > 0 ? 'replace' : 'add'} version ${flags.version} ${plan.replaces.length > 0 ? 'of' : 'to'} model "${flags.model}"`
        : `create model "${flags.model}"`;
      if (flags.dryRun === true) {
        io.stdout(`would ${what} (nothing written):\n${lines.join('\n')}\n`);
        for (const r of plan.replaces) io.stdout(`  replace ${shown(r)}\n`);
        io.stdout(`${generated.batchExplanation}\n`);
        printNotes();
        return ExitCode.Ok;
      }
      await applyScaffold(plan, { force: flags.force, link: flags.link, signal: io.signal });
      printNotes();
      io.stdout(
        `${pastTense(what)}:\n${lines.join('\n')}\n${generated.batchExplanation}\n\n` +
          tryWithoutIpu(generated, shellQuote(flags.repository), shellQuote(flags.model), io.cwd) +
          'Serve it with the Poplar backend (libtriton_poplar.so, from the Poplar SDK):\n' +
          `  tritonserver --model-repository ${shellQuote(flags.repository)} --backend-directory <backends>\n` +
          'where <backends>/poplar/libtriton_poplar.so exists (and the SDK libraries in <backends>/poplar/lib/).\n',
      );
      return ExitCode.Ok;
    });
  });
}
