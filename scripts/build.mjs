// Builds dist/: the library with tsc (ES modules and their .d.ts), then the
// CLI with esbuild as one CommonJS bundle (dist/bin.cjs) and the launcher
// that loads it (dist/launch.cjs). Why CommonJS and a launcher: README,
// "Start-up and the compile cache".
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { sep } from 'node:path';
import { build } from 'esbuild';
import { BUNDLE_EXTERNALS } from './bundle-externals.mjs';

const require = createRequire(import.meta.url);

/**
 * commander requires child_process when it loads, for the executable
 * subcommands popef does not have; loading it (with net and dgram) is about
 * 1.5 ms of every start. commander gets a stand-in that loads it on first use.
 */
const lazyChildProcessForCommander = {
  name: 'lazy-child-process-for-commander',
  setup(b) {
    b.onResolve({ filter: /^node:child_process$/ }, (args) =>
      args.importer.includes(`${sep}node_modules${sep}commander${sep}`) ? { path: 'child_process', namespace: 'popef-lazy' } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'popef-lazy' }, () => ({
      contents: "let loaded; module.exports = new Proxy({}, { get: (_, key) => (loaded ??= require('node:child_process'))[key] });",
      loader: 'js',
    }));
  },
};

rmSync('dist', { recursive: true, force: true });
execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
/** What the CLI's bundles share: CommonJS for Node 20, minified. */
const nodeBundle = {
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  minify: true,
  logLevel: 'warning',
  // Large, and needed only by serve, run --plugin triton and PNG inputs: loaded from node_modules when used.
  external: BUNDLE_EXTERNALS,
  // The sources are ES modules; in the bundle, import.meta.url is the bundle's own URL.
  define: { 'import.meta.url': '__popefBundleUrl' },
  banner: { js: "var __popefBundleUrl = require('node:url').pathToFileURL(__filename).href;" },
};
await build({
  ...nodeBundle,
  entryPoints: ['src/cli/bin.ts', 'src/cli/launch.ts', 'src/cli/early-workers.ts'],
  outdir: 'dist',
  outExtension: { '.js': '.cjs' },
  plugins: [lazyChildProcessForCommander],
});
// validate's worker thread (src/triton/repository/model-pool.ts), beside the bundle that starts it: the worker's code,
// and the file a worker starts from, which loads that code through the launcher's cache (src/cli/validate-worker-launch.ts).
await build({ ...nodeBundle, entryPoints: ['src/triton/repository/validate-worker.ts'], outfile: 'dist/validate-worker-body.cjs' });
await build({ ...nodeBundle, entryPoints: ['src/cli/validate-worker-launch.ts'], outfile: 'dist/validate-worker.cjs' });

// The viewer page, served by `popef view` and written by `popef view --export`.
const { buildView } = await import('./build-view.mjs');
await buildView();
