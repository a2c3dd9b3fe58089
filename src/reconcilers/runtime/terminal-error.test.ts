import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isTerminalError, terminalMessageOf, TerminalError } from './terminal-error.ts';

describe('TerminalError', () => {
  it('is an Error named TerminalError that keeps its cause', () => {
    const cause = new Error('root');
    const err = new TerminalError('no cgroup v2', { cause });
    assert.ok(err instanceof Error);
    assert.equal(err.name, 'TerminalError');
    assert.equal(err.message, 'no cgroup v2');
    assert.equal(err.cause, cause);
  });

  it('isTerminalError tells terminal from transient errors', () => {
    assert.equal(isTerminalError(new TerminalError('x')), true);
    const foreign = new Error('from another module copy');
    foreign.name = 'TerminalError';
    assert.equal(isTerminalError(foreign), true);
    assert.equal(isTerminalError(new Error('x')), false);
    assert.equal(isTerminalError('TerminalError'), false);
    assert.equal(isTerminalError({ name: 'TerminalError' }), false);
    assert.equal(isTerminalError(undefined), false);
  });

  it('an error that says it is terminal counts, and its terminalMessage is what the operation says', () => {
    const tool = Object.assign(new Error('tar --extract ... exited with 2: tar: Unexpected EOF in archive'), {
      terminal: true,
      terminalMessage: 'tar: Unexpected EOF in archive',
    });
    assert.equal(isTerminalError(tool), true);
    assert.equal(terminalMessageOf(tool), 'tar: Unexpected EOF in archive');
    assert.equal(isTerminalError(Object.assign(new Error('x'), { terminal: false })), false);
    assert.equal(isTerminalError({ terminal: true }), false);
    assert.equal(terminalMessageOf(new TerminalError('no cgroup v2')), 'no cgroup v2');
  });
});
