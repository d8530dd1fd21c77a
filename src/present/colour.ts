/**
 * The styles the presenters use. Presenters take this narrow interface,
 * not chalk's, so that a run without colour (a pipe, a file, CI,
 * NO_COLOR) never loads chalk: setting up its styles was a measurable part
 * of start-up for output that shows none of them.
 */
export interface Colour {
  readonly bold: (text: string) => string;
  readonly dim: (text: string) => string;
  readonly red: (text: string) => string;
  readonly green: (text: string) => string;
  readonly yellow: (text: string) => string;
  readonly cyan: (text: string) => string;
}

const same = (text: string): string => text;

/** Every style the identity: what a run without colour uses. */
export const NO_COLOUR: Colour = { bold: same, dim: same, red: same, green: same, yellow: same, cyan: same };

/**
 * Colour is decided once per run: --no-color, then NO_COLOR, then
 * FORCE_COLOR, then whether the stream is a terminal.
 */
export function colourLevel(options: {
  flag: boolean | undefined;
  env: Readonly<Record<string, string | undefined>>;
  isTTY: boolean;
}): 0 | 1 | 2 | 3 {
  if (options.flag === false) return 0;
  const noColor = options.env.NO_COLOR;
  if (noColor !== undefined && noColor !== '') return 0;
  const force = options.env.FORCE_COLOR;
  if (force !== undefined) {
    if (force === '0' || force === 'false') return 0;
    const level = Number(force);
    return level >= 1 && level <= 3 ? (level as 1 | 2 | 3) : 1;
  }
  return options.isTTY ? 1 : 0;
}

/** The styles for this run: chalk at the chosen level, loaded only when there is colour to show. */
export async function chooseColour(options: {
  flag: boolean | undefined;
  env: Readonly<Record<string, string | undefined>>;
  isTTY: boolean;
}): Promise<Colour> {
  const level = colourLevel(options);
  if (level === 0) return NO_COLOUR;
  const { Chalk } = await import('chalk');
  return new Chalk({ level });
}
