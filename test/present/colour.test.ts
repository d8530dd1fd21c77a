// The colour decision (present/colour.ts): --no-color, NO_COLOR,
// FORCE_COLOR, then the terminal; without colour the presenters get plain
// identity styles and chalk is never loaded.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { NO_COLOUR, chooseColour, colourLevel } from '../../src/present/colour.js';

const ESC = String.fromCharCode(27);

describe('colour', () => {
  it('is decided by the flag, then NO_COLOR, then FORCE_COLOR, then the terminal', () => {
    assert.equal(colourLevel({ flag: false, env: { FORCE_COLOR: '3' }, isTTY: true }), 0);
    assert.equal(colourLevel({ flag: undefined, env: { NO_COLOR: '1', FORCE_COLOR: '3' }, isTTY: true }), 0);
    assert.equal(colourLevel({ flag: undefined, env: { NO_COLOR: '', FORCE_COLOR: '2' }, isTTY: false }), 2);
    assert.equal(colourLevel({ flag: undefined, env: { FORCE_COLOR: '0' }, isTTY: true }), 0);
    assert.equal(colourLevel({ flag: undefined, env: { FORCE_COLOR: 'false' }, isTTY: true }), 0);
    assert.equal(colourLevel({ flag: undefined, env: { FORCE_COLOR: 'yes' }, isTTY: false }), 1);
    assert.equal(colourLevel({ flag: undefined, env: {}, isTTY: true }), 1);
    assert.equal(colourLevel({ flag: undefined, env: {}, isTTY: false }), 0);
  });

  it('without colour, every style returns its text unchanged', async () => {
    const plain = await chooseColour({ flag: undefined, env: {}, isTTY: false });
    assert.equal(plain, NO_COLOUR);
    for (const style of [plain.bold, plain.dim, plain.red, plain.green, plain.yellow, plain.cyan]) assert.equal(style('text'), 'text');
  });

  it('with colour, styles are chalk at the chosen level', async () => {
    const c = await chooseColour({ flag: undefined, env: { FORCE_COLOR: '1' }, isTTY: false });
    assert.equal(c.red('x'), `${ESC}[31mx${ESC}[39m`);
    assert.equal(c.bold('x'), `${ESC}[1mx${ESC}[22m`);
  });
});
