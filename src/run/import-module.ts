/**
 * import() of a module named at run time: a plugin, onnxruntime-node.
 *
 * The CLI launcher (src/cli/launch.ts) compiles the bundled CLI through
 * vm.Script to use V8's code cache, and on Node 20 an import() inside such a
 * script has no loader (ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING; the API that
 * would give it one is experimental, and is lost when the code comes from a
 * cache). So the launcher passes its own import() in as `__popefImport`, a
 * parameter of the function the bundle is wrapped in. Everywhere else (the
 * library, the bundle loaded by require) the name is unbound and this is a
 * plain import(). Specifiers are absolute URLs or package names; the launcher
 * sits beside the bundle, so package names resolve the same from either.
 */
declare const __popefImport: ((specifier: string) => Promise<unknown>) | undefined;

export function importModule(specifier: string): Promise<unknown> {
  return typeof __popefImport === 'function' ? __popefImport(specifier) : import(specifier);
}
