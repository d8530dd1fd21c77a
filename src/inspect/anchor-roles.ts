import type { Anchor, Metadata } from '../schema/model.js';

/**
 * Which anchors a caller feeds or receives at run time ("user-provided", as
 * popef_dump labels them) and what the others are for.
 *
 * The rule, applied in this order, first match wins:
 * 1. `seed`: the anchor's handle is the metadata's seed handle (the runtime
 *    feeds the random seed itself);
 * 2. `stored`: a tensor data blob of the same name holds its data (weights,
 *    frozen inputs);
 * 3. `unknown`: its type is UNKNOWN (PopART's weights without a stream);
 * 4. `user-input` / `user-output`: an INPUT / OUTPUT anchor used by a program
 *    of the main phase of the program flow;
 * 5. `load-save`: an INPUT / OUTPUT anchor used only outside the main phase
 *    (weights streamed by the load program, read back by the save program).
 *
 * This matches the callback policy Graphcore's Model Runtime users apply
 * (bind user callbacks to streams used in the main program) and the seed
 * document's report. It is an inference, not Graphcore's published rule.
 */
export type AnchorRole = 'user-input' | 'user-output' | 'stored' | 'seed' | 'unknown' | 'load-save';

export const ROLE_ORDER: readonly AnchorRole[] = ['user-input', 'user-output', 'stored', 'seed', 'load-save', 'unknown'];

/** The role of one anchor of `metadata` (see AnchorRole); `storedNames` are the tensors that have a data blob. */
export function anchorRole(anchor: Anchor, metadata: Metadata, storedNames: ReadonlySet<string>): AnchorRole {
  if (metadata.seedHandle !== '' && anchor.handle === metadata.seedHandle) return 'seed';
  if (storedNames.has(anchor.name)) return 'stored';
  if (anchor.type === 'UNKNOWN') return 'unknown';
  const main = new Set(metadata.programFlow.main);
  const inMain = anchor.programs.some((p) => main.has(p));
  if (inMain) return anchor.type === 'INPUT' ? 'user-input' : 'user-output';
  return 'load-save';
}

/** The user-provided anchors of a model, in anchor order: what a server's config exposes. */
export function userAnchors(metadata: Metadata, storedNames: ReadonlySet<string>): { inputs: Anchor[]; outputs: Anchor[] } {
  const inputs: Anchor[] = [];
  const outputs: Anchor[] = [];
  for (const a of metadata.anchors) {
    const role = anchorRole(a, metadata, storedNames);
    if (role === 'user-input') inputs.push(a);
    else if (role === 'user-output') outputs.push(a);
  }
  return { inputs, outputs };
}
