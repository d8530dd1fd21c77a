/**
 * The temporary names this process has made (see temp-names.ts), kept apart
 * from the code that makes them so that the CLI's exit hook can read the
 * list without loading node:crypto at every start.
 */
const handedOut = new Set<string>();

export function recordTemporary(path: string): void {
  handedOut.add(path);
}

/**
 * The temporary names this process has made. When popef has to exit before
 * a write could clean up (Ctrl-C during a copy the OS will not interrupt),
 * the CLI removes them synchronously at exit; a name already renamed into
 * place no longer exists, so removing it does nothing.
 */
export function pendingTemporaries(): readonly string[] {
  return [...handedOut];
}
