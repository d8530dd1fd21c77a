/** Types of scripts/build-view.mjs, for the tests and benchmarks that build the page. */
export interface BuiltView {
  /** Size of the page, script and style inlined. */
  readonly bytes: number;
  readonly scriptBytes: number;
  /** The bundle's input files (with `metafile`), for the test that no Node built-in is among them. */
  readonly inputs: readonly string[];
}
export function buildView(options?: { outFile?: string; metafile?: boolean }): Promise<BuiltView>;
