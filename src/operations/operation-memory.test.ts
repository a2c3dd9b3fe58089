import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createManualClock } from '../reconcilers/runtime/clock.ts';
import { createOperationMemory } from './operation-memory.ts';
import { newOperationRow } from './new-operation-row.ts';
import { StatusCode } from './status.ts';

const rowOf = (statusCode: number, id = '6f1c2d3e-0000-4000-8000-000000000001') =>
  newOperationRow({ id, class: 'task', description: 'Updating container', project: 'default' }, statusCode, {
    now: new Date(0),
    node: 'n',
    defaultDeadlineMs: 0,
  });

test('only writer: an announced operation is current until it ends, for a GET as for a wait', () => {
  const memory = createOperationMemory({ clock: createManualClock(), onlyWriter: true });
  const running = rowOf(StatusCode.Running);
  memory.record(running);
  assert.equal(memory.get(running.id), running);
  assert.equal(memory.announced(running.id), running);
  const done = { ...running, statusCode: StatusCode.Success };
  memory.record(done);
  assert.equal(memory.get(running.id), done);
  memory.record(running);
  assert.equal(memory.get(running.id), done, 'a creation announced after the end changes nothing');
});

test("shared database: what this process announced serves a wait's first read only, and is forgotten after a while", async () => {
  const clock = createManualClock();
  const memory = createOperationMemory({ clock, onlyWriter: false });
  const running = rowOf(StatusCode.Running);
  memory.record(running);
  assert.equal(memory.get(running.id), undefined, 'a GET reads the database (another member may have ended it)');
  assert.equal(memory.announced(running.id), running, 'a wait starts from it');

  const other = rowOf(StatusCode.Running, '6f1c2d3e-0000-4000-8000-000000000002');
  memory.record(other);
  await clock.advance(60_001);
  memory.forgetOldEnds();
  assert.equal(memory.announced(other.id), undefined, 'never seen ending here: forgotten');

  memory.record(running);
  const done = { ...running, statusCode: StatusCode.Success };
  memory.record(done);
  assert.equal(memory.get(running.id), done, 'an end seen here is current for a GET too');
  assert.equal(memory.announced(running.id), done);
});
