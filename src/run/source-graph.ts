/**
 * Where a model carries its source ONNX graph: an opaque blob of the
 * executable named "onnx" or "onnx:<anything>", the convention `popef pack`
 * users follow. The cpu plugin reads that blob; `run` and `scaffold` ask
 * whether it is there to choose and to suggest the plugin, so all three
 * share this one test.
 */

/** Whether an opaque blob of this name is the model's source ONNX graph. */
function isSourceGraphBlob(name: string): boolean {
  return name === 'onnx' || name.startsWith('onnx:');
}

/** The opaque blob holding the source ONNX graph, among an executable's opaque blobs. */
export function sourceGraphBlob<T extends { readonly name: string }>(opaques: readonly T[]): T | undefined {
  return opaques.find((o) => isSourceGraphBlob(o.name));
}
