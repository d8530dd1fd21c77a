// childPath (src/io/child-path.ts) gives path.join's answer for every
// normalized directory and name, including the names it hands to join.
import assert from 'node:assert/strict';
import { join, normalize } from 'node:path';
import { describe, it } from 'node:test';
import { childPath } from '../../src/io/child-path.js';

describe('childPath', () => {
  it('is path.join for normalized directories, names of one component and names that are not', () => {
    const dirs = ['/', '/a', '/a/b', 'a', 'a/', './', '.', '..', '../x', '/a/./b', 'a//b/', '/tmp/repo/'].map((d) => normalize(d)).concat(['']);
    const names = ['x', 'config.pbtxt', '.hidden', '..', '.', '', 'a/b', '../up', '...', ' spaced', 'back\\slash', '1'];
    for (const dir of dirs) for (const name of names) assert.equal(childPath(dir, name), join(dir, name), JSON.stringify([dir, name]));
  });
});
