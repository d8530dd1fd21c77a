import { readFile, readdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { ErrorCode, PopefError, ioError } from '../../errors.js';
import { packageRoot } from '../../package-root.js';
import { writeFilesAtomically } from '../../triton/write-files.js';
import type { CliIo } from '../io.js';

/** One file of an example: where it is in the installed package, and where it goes under DIR. */
interface ExampleFile {
  readonly from: string;
  readonly to: string;
}

/** What `popef example mnist` writes: the files the README's walkthrough uses, from the package's own copies (package.json "files"). */
async function mnistFiles(root: string): Promise<ExampleFile[]> {
  const img = join(root, 'fixtures/mnist/img');
  const images = (
    await readdir(img).catch((error: unknown) => {
      throw ioError(error, img, 'list the sample images of');
    })
  )
    .filter((name) => name.endsWith('.png'))
    .sort();
  return [
    { from: join(root, 'fixtures/mnist/executable.popef'), to: 'executable.popef' },
    ...images.map((name) => ({ from: join(img, name), to: join('img', name) })),
    { from: join(root, 'src/examples/mnist/mnist_client.py'), to: 'mnist_client.py' },
    { from: join(root, 'src/examples/mnist/requirements.txt'), to: 'requirements.txt' },
  ];
}

/** The examples `popef example` knows, by name. */
export const EXAMPLES: Readonly<Record<string, (root: string) => Promise<ExampleFile[]>>> = { mnist: mnistFiles };

/** Copies the example `name` into `dir` (relative to the working directory) in one atomic step; returns the paths written, under `dir` as given. */
export async function writeExample(name: string, dir: string, force: boolean, io: CliIo): Promise<string[]> {
  const list = EXAMPLES[name];
  if (list === undefined)
    throw new PopefError(ErrorCode.Usage, `no example named "${name}"`, { suggestion: `the examples are: ${Object.keys(EXAMPLES).join(', ')}` });
  const files = await list(packageRoot());
  const target = resolve(io.cwd, dir);
  const contents = await Promise.all(
    files.map(async (f) => ({
      path: join(target, f.to),
      content: await readFile(f.from).catch((error: unknown) => {
        throw ioError(error, f.from, 'read the example file');
      }),
    })),
  );
  await writeFilesAtomically(contents, { force });
  return files.map((f) => join(dir, f.to));
}
