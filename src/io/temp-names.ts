import { randomBytes } from 'node:crypto';
import { readdir, rename, rm, stat } from 'node:fs/promises';
import { hostname } from 'node:os';
// The PID names our temporary files and tells whether their writer still runs: identity, not configuration, so it is imported rather than taken as a parameter.
import { kill, pid as ownPid } from 'node:process';
import { basename, dirname, join } from 'node:path';
import { recordTemporary } from './temp-registry.js';

/**
 * Names for the temporary files and staging directories our writes make
 * beside their destination, and the clean-up of ones a killed run left.
 *
 * A write goes to `.NAME.popef-tmp-HOST-PID-RANDOM` (a file) or
 * `.NAME.popef-staging-HOST-PID-RANDOM` (a directory) and is renamed into
 * place. SIGKILL between the two leaves it behind; so before writing NAME
 * again, every sibling of that pattern whose process is gone (same host,
 * PID not alive) is removed. The host is part of the name because a
 * directory may be shared between machines, where a PID says nothing.
 * A scaffold killed while replacing a model leaves the replaced entry as
 * `STAGING.old-ENTRY` (an unpack, the replaced directory as `STAGING.old`):
 * it is moved back when the original is missing (the replacement never
 * landed), else removed (it did).
 */

const HOST = hostname().replace(/[^A-Za-z0-9]/g, '_');

export type TempKind = 'tmp' | 'staging';

/** A fresh sibling name for a write to `path`, recorded for the exit hook (temp-registry.ts). */
export function tempSibling(path: string, kind: TempKind): string {
  const name = join(dirname(path), `.${basename(path)}.popef-${kind}-${HOST}-${ownPid}-${randomBytes(6).toString('hex')}`);
  recordTemporary(name);
  return name;
}

function alive(pid: number): boolean {
  if (pid === ownPid) return true;
  try {
    kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, under another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Removes what dead runs of ours left beside `path` (see above). Returns the
 * names removed or restored. Never throws: a leftover that cannot be removed
 * must not stop the write that is about to replace it.
 */
export async function removeStaleSiblings(path: string): Promise<string[]> {
  const dir = dirname(path);
  const pattern = new RegExp(`^\\.${escapeRegExp(basename(path))}\\.popef-(tmp|staging)-${escapeRegExp(HOST)}-(\\d+)-[0-9a-f]{12}(\\.old(?:-(.+))?)?$`);
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return [];
  }
  const done: string[] = [];
  for (const name of names) {
    const m = pattern.exec(name);
    if (m === null || alive(Number(m[2]))) continue;
    const leftover = join(dir, name);
    const backup = m[3] !== undefined;
    const entry = m[4];
    try {
      if (backup) {
        const original = entry === undefined ? path : join(path, entry);
        const present = await stat(original).then(
          () => true,
          () => false,
        );
        if (!present) {
          await rename(leftover, original);
          done.push(name);
          continue;
        }
      }
      await rm(leftover, { recursive: true, force: true });
      done.push(name);
    } catch {
      // Left for the next run, or for the user.
    }
  }
  return done;
}
