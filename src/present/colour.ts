import { Chalk, type ChalkInstance } from 'chalk';

/**
 * Colour is decided once per run: --no-color, then NO_COLOR, then
 * FORCE_COLOR, then whether the stream is a terminal. Presenters receive
 * the resulting instance; at level 0 every style is the identity.
 */
export function chooseColour(options: { flag: boolean | undefined; env: Readonly<Record<string, string | undefined>>; isTTY: boolean }): ChalkInstance {
  if (options.flag === false) return new Chalk({ level: 0 });
  const noColor = options.env.NO_COLOR;
  if (noColor !== undefined && noColor !== '') return new Chalk({ level: 0 });
  const force = options.env.FORCE_COLOR;
  if (force !== undefined) {
    if (force === '0' || force === 'false') return new Chalk({ level: 0 });
    const level = Number(force);
    return new Chalk({ level: level >= 1 && level <= 3 ? (level as 1 | 2 | 3) : 1 });
  }
  return new Chalk({ level: options.isTTY ? 1 : 0 });
}
