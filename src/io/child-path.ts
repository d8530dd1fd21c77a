import { join } from 'node:path';

/**
 * path.join(dir, name) for a `name` that is one path component (an entry of
 * a directory listing, or a fixed file name such as config.pbtxt) and a
 * `dir` that is already normalized (by path.normalize, join or resolve, or
 * by this function): then join's answer is the two put together with one
 * slash, and its normalizing pass over the whole path is skipped. validate
 * builds about ten paths per model, in a run too short for V8 to optimize
 * path.join, where that pass cost more than the rest of the join (issue 26).
 * Any other name goes through join.
 */
export function childPath(dir: string, name: string): string {
  if (name === '' || name === '.' || name === '..' || name.includes('/') || dir === '' || dir === '.' || dir === './') return join(dir, name);
  return dir.endsWith('/') ? dir + name : `${dir}/${name}`;
}
