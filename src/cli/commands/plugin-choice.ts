import { loadPlugin, type PluginContext } from '../../run/load-plugin.js';
import { cannotRunHere, type ExecutionPlugin } from '../../run/plugin-api.js';

/** What the model offers the built-in plugins: its source graph (for cpu). */
export interface PluginNeeds {
  /** The model carries an opaque blob named "onnx", or --reference gives the graph. */
  readonly hasGraph: boolean;
}

/**
 * The way to the other built-in plugin, for a "cannot run here" error:
 * a machine without the SDK can often still run the source graph, and the
 * reverse.
 */
export function otherPluginHint(name: string): string | undefined {
  if (name === 'ipu')
    return 'or run the source ONNX graph on this machine with --plugin cpu (from --reference model.onnx or the model\'s opaque blob named "onnx")';
  if (name === 'cpu') return 'or run the model itself with --plugin ipu where the Poplar SDK is enabled';
  return undefined;
}

/** Refuses a plugin that cannot run here, with its own hint and the way to the other plugin. */
export async function assertAvailable(plugin: ExecutionPlugin): Promise<void> {
  const availability = await plugin.probe();
  if (availability.available) return;
  const hints = [availability.hint, otherPluginHint(plugin.name)].filter((h): h is string => h !== undefined && h !== '');
  throw cannotRunHere(`plugin "${plugin.name}"`, { ...availability, ...(hints.length === 0 ? {} : { hint: hints.join('; ') }) });
}

export interface ChosenPlugin {
  readonly plugin: ExecutionPlugin;
  /** Why it was chosen, for standard error. */
  readonly why: string;
}

/**
 * The default of `popef run --plugin`: ipu where the Poplar SDK is found
 * (the model itself runs), else cpu when the model's source graph is at
 * hand, else ipu, whose refusal then says what is missing.
 */
export async function defaultPlugin(needs: PluginNeeds, ctx: PluginContext): Promise<ChosenPlugin> {
  const ipu = await loadPlugin('ipu', ctx);
  // A bridge that cannot even start (no python3) counts as no SDK when cpu can take over.
  const found = await ipu.probe().catch((error: unknown) => {
    if (!needs.hasGraph) throw error;
    return { available: false };
  });
  if (found.available) return { plugin: ipu, why: 'the Poplar SDK is enabled' };
  if (!needs.hasGraph) return { plugin: ipu, why: 'the model carries no ONNX graph for the cpu plugin' };
  await ipu.dispose();
  const cpu = await loadPlugin('cpu', ctx);
  return { plugin: cpu, why: 'no Poplar SDK was found, and the model has its source ONNX graph' };
}
