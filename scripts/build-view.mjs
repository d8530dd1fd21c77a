// Builds the viewer page (dist/view/index.html): src/view/main.ts and the
// library core it imports, bundled for the browser into one classic script
// and inlined with its style into page.html, so that the one file works
// from file:// (module scripts do not), from `popef view`'s server, and on
// any static host.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Buffer } from 'node:buffer';
import { build } from 'esbuild';

const require = createRequire(import.meta.url);

/**
 * Three modules of the core have a browser twin beside them
 * (`name.browser.ts`): the platform primitives (CRC-32, UTF-8, inflate),
 * FileSource (no file system in a page) and the JSON Schema loader (schemas
 * bundled, not read from disk). The page's bundle uses the twins.
 */
const BROWSER_TWINS = ['io/platform', 'io/file-source', 'json-schemas'];

const browserTwins = {
  name: 'popef-browser-twins',
  setup(b) {
    const filter = new RegExp(`(^|/)(${BROWSER_TWINS.map((m) => m.split('/').pop()).join('|')})\\.js$`);
    b.onResolve({ filter }, async (args) => {
      if (args.kind !== 'import-statement' || args.pluginData === 'twin') return undefined;
      const resolved = await b.resolve(args.path.replace(/\.js$/, '.browser.js'), {
        resolveDir: args.resolveDir,
        kind: args.kind,
        pluginData: 'twin',
      });
      return resolved.errors.length === 0 ? { path: resolved.path } : undefined;
    });
    // Node's path module is only used for POSIX path arithmetic in the config rules.
    b.onResolve({ filter: /^node:path$/ }, () => ({ path: require.resolve('path-browserify') }));
  },
};

/** Builds the page; returns its size in bytes and the bundle's inputs (for the no-Node-built-ins test). */
export async function buildView({ outFile = 'dist/view/index.html', metafile = false } = {}) {
  const result = await build({
    entryPoints: ['src/view/main.ts'],
    bundle: true,
    platform: 'browser',
    format: 'iife',
    target: ['chrome110', 'firefox115', 'safari16'],
    minify: true,
    write: false,
    logLevel: 'warning',
    metafile,
    legalComments: 'none',
    plugins: [browserTwins],
    // Buffer for the pbtxt code (src/view/buffer-global.ts says why).
    inject: ['src/view/buffer-global.ts'],
  });
  const script = result.outputFiles[0].text;
  if (/<\/script/i.test(script)) throw new Error('the page bundle contains "</script" and cannot be inlined');
  const page = readFileSync('src/view/page.html', 'utf8')
    .replace('/*POPEF-STYLE*/', () => readFileSync('src/view/style.css', 'utf8'))
    .replace('/*POPEF-SCRIPT*/', () => script);
  mkdirSync(outFile.replace(/\/[^/]*$/, ''), { recursive: true });
  writeFileSync(outFile, page);
  const size = (text) => Buffer.byteLength(text);
  return { bytes: size(page), scriptBytes: size(script), inputs: metafile ? Object.keys(result.metafile.inputs) : [] };
}
