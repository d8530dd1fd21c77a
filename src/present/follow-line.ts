import type { Finding } from '../triton/repository/findings.js';

/**
 * "and 4 findings that follow from it": what a cause says of its folded
 * consequences, in every validate format and in the viewer's panel. A module
 * of its own, with no Node import, so that the browser bundle can take it.
 */
export function followLine(f: Finding): string | undefined {
  const n = f.consequences?.length ?? 0;
  return n === 0 ? undefined : `and ${n} finding${n === 1 ? '' : 's'} that follow${n === 1 ? 's' : ''} from it`;
}
