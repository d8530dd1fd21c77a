import { ErrorCode, PopefError } from '../../errors.js';
import type { ModelSet } from '../../format/model-set.js';
import { describedModels } from '../../inspect/description.js';
import type { ReadForeignPopef } from '../../triton/repository/popef-cross-check.js';
import type { CliIo } from '../io.js';
import { SdkBridge, openModelSet } from './open-popef.js';

/**
 * validate's reader of PopEF files not in the open layout: the SDK's own
 * popef.Reader through the bridge (open-popef.ts), where the SDK is
 * installed. The validator lives below the run layer and cannot start the
 * bridge itself, so the CLI hands it this function. Without the SDK it
 * answers undefined once and for all, and validate notes the model as not
 * cross-checked.
 */
export function sdkPopefReader(io: CliIo): { read: ReadForeignPopef; dispose: () => Promise<void> } {
  let noSdk = false;
  // One bridge for the whole run, started by the first SDK file (validate may open hundreds).
  const sdk = new SdkBridge(io);
  const read: ReadForeignPopef = async (paths) => {
    if (noSdk) return undefined;
    let set: ModelSet;
    try {
      // Metadata and anchors only: the executables are not copied out of the SDK file.
      set = await openModelSet(paths, io, { executables: false, sdk });
    } catch (error) {
      if (!(error instanceof PopefError)) throw error;
      // No SDK here (the open layout's own E_NOT_POPEF comes back): asked once per run.
      if (error.code === ErrorCode.NotPopef) noSdk = true;
      // Unread, by either reader: validate notes the model as not cross-checked, with why.
      return undefined;
    }
    try {
      return { models: describedModels(set) };
    } finally {
      await set.close();
    }
  };
  return { read, dispose: () => sdk.dispose() };
}
