// The README's console blocks, read: their commands and the lines shown
// under each, and how shown lines match printed ones ("..." stands for any
// number of lines). test/readme.test.ts and test/package/install.test.ts run
// them.
export interface Command {
  readonly line: number;
  readonly text: string;
  readonly expected: string[];
}

/**
 * The commands of every block whose info string is `info` (```console: run
 * from the repository root; ```console installed: in a project that
 * installed the package), with the lines shown after each.
 */
export function consoleCommands(markdown: string, info: 'console' | 'console installed'): Command[] {
  const out: Command[] = [];
  const lines = markdown.split('\n');
  let inBlock = false;
  let current: { line: number; text: string; expected: string[] } | undefined;
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i] ?? '';
    if (!inBlock && l === `\`\`\`${info}`) {
      inBlock = true;
      continue;
    }
    if (inBlock && l.startsWith('```')) {
      inBlock = false;
      if (current !== undefined) out.push(current);
      current = undefined;
      continue;
    }
    if (!inBlock) continue;
    if (l.startsWith('$ ')) {
      if (current !== undefined) out.push(current);
      current = { line: i + 1, text: l.slice(2), expected: [] };
      // Continuation lines of a command end in a backslash.
      while (current.text.endsWith('\\') && i + 1 < lines.length) current.text = `${current.text.slice(0, -1)} ${(lines[++i] ?? '').trim()}`;
    } else if (current !== undefined) current.expected.push(l);
  }
  return out;
}

/** Whether `actual` is `expected` with each "..." line standing for any number of lines. */
export function matches(expected: readonly string[], actual: readonly string[]): boolean {
  const memo = new Map<string, boolean>();
  const go = (e: number, a: number): boolean => {
    const key = `${e}:${a}`;
    const known = memo.get(key);
    if (known !== undefined) return known;
    let result: boolean;
    if (e === expected.length) result = a === actual.length;
    else if (expected[e] === '...') result = go(e + 1, a) || (a < actual.length && go(e, a + 1));
    else result = a < actual.length && expected[e] === actual[a] && go(e + 1, a + 1);
    memo.set(key, result);
    return result;
  };
  return go(0, 0);
}

/** The expected lines, in order, somewhere in the output (for a background command). */
export function appearInOrder(expected: readonly string[], output: string): boolean {
  const lines = output.split('\n');
  let at = 0;
  for (const e of expected.filter((x) => x !== '...')) {
    while (at < lines.length && lines[at] !== e) at++;
    if (at === lines.length) return false;
    at++;
  }
  return true;
}
