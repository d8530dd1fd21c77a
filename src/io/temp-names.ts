import { readdir, rename, rm, stat } from 'node:fs/promises';
import { hostname } from 'node:os';
// The PID names our temporary files and tells whether their writer still runs: identity, not configuration, so it is imported rather than taken as a parameter.
import { kill, pid as ownPid } from 'node:process';
import { basename, dirname, join } from 'node:path';
import { nodeCrypto } from './node-crypto.js';
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
  const name = join(dirname(path), `.${basename(path)}.popef-${kind}-${HOST}-${ownPid}-${nodeCrypto().randomBytes(6).toString('hex')}`);
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
 * Removes what dead runs of ours left beside each of `paths` (see above),
 * listing each directory once. Returns the names removed or restored.
 * Never throws: a leftover that cannot be removed must not stop the write
 * that is about to replace it.
 */
export async function removeStaleSiblings(...paths: string[]): Promise<string[]> {
  const byDir = new Map<string, Map<string, string>>();
  for (const path of paths) {
    const names = byDir.get(dirname(path)) ?? new Map<string, string>();
    names.set(basename(path), path);
    byDir.set(dirname(path), names);
  }
  const pattern = new RegExp(`^\\.(.+)\\.popef-(?:tmp|staging)-${escapeRegExp(HOST)}-(\\d+)-[0-9a-f]{12}(\\.old(?:-(.+))?)?$`);
  const done: string[] = [];
  for (const [dir, wanted] of byDir) {
    let names: string[];
    try {
      names = await readdir(dir);
    } catch {
      continue;
    }
    for (const name of names) {
      const m = pattern.exec(name);
      const path = m === null ? undefined : wanted.get(m[1] ?? '');
      if (m === null || path === undefined || alive(Number(m[2]))) continue;
      if (await removeLeftover(join(dir, name), path, m[3] !== undefined, m[4])) done.push(name);
    }
  }
  return done;
}

export interface DeadStaging {
  /** The staging directory (it may be gone already). */
  readonly staging: string;
  /** Entries the dead run had moved aside: entry name -> backup path. */
  readonly backups: ReadonlyMap<string, string>;
}

/**
 * The staging directories and `.old-ENTRY` backups beside `path` whose
 * writer is gone, grouped by staging directory: what a caller that knows
 * the shape of its own replacement (scaffold) needs to finish or undo it as
 * one step rather than entry by entry.
 */
export async function deadStagings(path: string): Promise<DeadStaging[]> {
  const dir = dirname(path);
  const pattern = new RegExp(`^(\\.${escapeRegExp(basename(path))}\\.popef-staging-${escapeRegExp(HOST)}-(\\d+)-[0-9a-f]{12})(?:\\.old-(.+))?$`);
  const groups = new Map<string, Map<string, string>>();
  for (const name of await readdir(dir).catch(() => [])) {
    const m = pattern.exec(name);
    if (m === null || alive(Number(m[2]))) continue;
    const staging = join(dir, m[1] ?? '');
    const backups = groups.get(staging) ?? new Map<string, string>();
    if (m[3] !== undefined) backups.set(m[3], join(dir, name));
    groups.set(staging, backups);
  }
  return [...groups].map(([staging, backups]) => ({ staging, backups }));
}

/** Removes one leftover, or moves a backup back where its original is missing; false when that fails. */
async function removeLeftover(leftover: string, path: string, backup: boolean, entry: string | undefined): Promise<boolean> {
  try {
    if (backup) {
      const original = entry === undefined ? path : join(path, entry);
      const present = await stat(original).then(
        () => true,
        () => false,
      );
      if (!present) {
        await rename(leftover, original);
        return true;
      }
    }
    await rm(leftover, { recursive: true, force: true });
    return true;
  } catch {
    // Left for the next run, or for the user.
    return false;
  }
}
