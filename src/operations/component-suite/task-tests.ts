/** The operations suite's tasks: run, fail, deferInsert, wait, cancel, websockets (define-operations-suite.ts). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type WebSocket from 'ws';
import { call, openSocket } from '../../test-support/agent-harness.ts';
import { stored as storedColumn, until, type SuiteContext } from './suite-support.ts';

export function defineTaskTests(ctx: SuiteContext): void {
  const pending = (() => {
    let resolve!: (v: Record<string, string>) => void;
    const promise = new Promise<Record<string, string>>((r) => (resolve = r));
    return { promise, resolve };
  })();

  test('a task runs as an operation: listed while running, Success with its metadata, events carry the full object', async () => {
    const agent = ctx.agent();
    const events = ctx.events();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const op = await agent.ops.startTask(
      {
        class: 'task',
        description: 'Doing a thing',
        project: 'default',
        resources: { profiles: ['/1.0/profiles/default'] },
      },
      async () => {
        await gate;
        return { answer: 42 };
      },
    );
    const listed = await call(agent, 'GET', '/1.0/operations');
    assert.ok(listed.json.metadata.includes(`/1.0/operations/${op.id}`));
    const running = await call(agent, 'GET', `/1.0/operations/${op.id}`);
    assert.equal(running.json.metadata.status_code, 103);
    assert.equal(running.json.metadata.status, 'Running');
    release();
    const done = await call(agent, 'GET', `/1.0/operations/${op.id}/wait?timeout=5`);
    assert.equal(done.json.metadata.status_code, 200);
    assert.equal(done.json.metadata.metadata.answer, 42);
    assert.equal(done.json.metadata.description, 'Doing a thing');
    assert.deepEqual(done.json.metadata.resources, { profiles: ['/1.0/profiles/default'] });
    assert.ok(!(await call(agent, 'GET', '/1.0/operations')).json.metadata.includes(`/1.0/operations/${op.id}`));
    // Finished operations stay readable.
    assert.equal((await call(agent, 'GET', `/1.0/operations/${op.id}`)).json.metadata.status, 'Success');
    await until(() => events.filter((e) => e.metadata.id === op.id).length >= 2, 'operation events');
    const mine = events.filter((e) => e.metadata.id === op.id);
    assert.equal(mine[0].type, 'operation');
    assert.equal(mine[0].metadata.status_code, 103);
    assert.equal(mine.at(-1).metadata.status_code, 200);
    for (const k of [
      'id',
      'class',
      'created_at',
      'updated_at',
      'status',
      'status_code',
      'resources',
      'metadata',
      'may_cancel',
      'err',
    ])
      assert.ok(k in mine.at(-1).metadata, k);
  });

  test('a failing task ends as Failure (400) with its error text', async () => {
    const agent = ctx.agent();
    const op = await agent.ops.startTask({ class: 'task', description: 'Failing', project: 'default' }, async () => {
      throw new Error('disk on fire');
    });
    const done = await call(agent, 'GET', `/1.0/operations/${op.id}/wait`);
    assert.equal(done.json.metadata.status_code, 400);
    assert.equal(done.json.metadata.status, 'Failure');
    assert.equal(done.json.metadata.err, 'disk on fire');
  });

  test('deferInsert: answered and started before any write, served from memory; a short task is written once, with its end', async () => {
    const agent = ctx.agent();
    const stored = (id: string, column: string) => storedColumn(agent, id, column);
    let release!: () => void;
    let startedSync = false;
    const id = crypto.randomUUID();
    const op = await agent.ops.startTask(
      { id, class: 'task', description: 'Deferred', project: 'default' },
      async () => {
        startedSync = true;
        await new Promise<void>((r) => (release = r));
        return { answer: 7 };
      },
      { deferInsert: true },
    );
    assert.equal(op.id, id);
    assert.equal(startedSync, true, 'the task started before startTask returned');
    assert.deepEqual(await stored(id, 'id'), [], 'not written yet');
    // Served from memory: get and list.
    assert.equal((await call(agent, 'GET', `/1.0/operations/${id}`)).json.metadata.status_code, 103);
    const listed: { id: string }[] = (await call(agent, 'GET', '/1.0/operations?recursion=1')).json.metadata;
    assert.ok(
      listed.some((o) => o.id === id),
      JSON.stringify(listed),
    );
    release();
    const done = await call(agent, 'GET', `/1.0/operations/${id}/wait?timeout=5`);
    assert.equal(done.json.metadata.status_code, 200);
    assert.equal(done.json.metadata.metadata.answer, 7);
    await until(async () => (await stored(id, 'status_code'))[0] === 200, 'the row, written with its end');
    assert.deepEqual(await stored(id, 'metadata'), [{ answer: 7 }]);

    // Several ending together: written in one batch, each one.
    const many = await Promise.all(
      [1, 2, 3].map((n) =>
        agent.ops.startTask({ class: 'task', description: `Batch ${n}`, project: 'default' }, async () => ({ n }), {
          deferInsert: true,
        }),
      ),
    );
    for (const m of many)
      await until(async () => (await stored(m.id, 'status_code'))[0] === 200, `batch row ${m.description}`);

    // One that runs longer than DEFER_INSERT_MS (250 ms): written running, then its end.
    let releaseSlow!: () => void;
    const slow = await agent.ops.startTask(
      { class: 'task', description: 'Slow', project: 'default' },
      () => new Promise<void>((r) => (releaseSlow = r)),
      { deferInsert: true },
    );
    await until(
      async () => (await stored(slow.id, 'status_code'))[0] === 103,
      'the running row, written by the timer',
      2_000,
    );
    releaseSlow();
    assert.equal(
      (await call(agent, 'GET', `/1.0/operations/${slow.id}/wait?timeout=5`)).json.metadata.status_code,
      200,
    );
    await until(async () => (await stored(slow.id, 'status_code'))[0] === 200, 'the slow end');

    // A long one whose write fails (a taken id): the task sees its signal aborted, the operation ends as
    // Failure naming the write's error, the table keeps the first row.
    let aborted!: (why: unknown) => void;
    const sawAbort = new Promise((r) => (aborted = r));
    const dup = await agent.ops.startTask(
      { id, class: 'task', description: 'Duplicate', project: 'default' },
      ({ signal }) =>
        new Promise<void>((resolve) =>
          signal.addEventListener('abort', () => (aborted(signal.reason), resolve()), { once: true }),
        ),
      { deferInsert: true },
    );
    assert.equal(dup.id, id);
    assert.ok(await sawAbort);
    const failed = await call(agent, 'GET', `/1.0/operations/${id}/wait?timeout=5`);
    assert.equal(failed.json.metadata.status_code, 400);
    assert.match(failed.json.metadata.err, /^could not record the operation: /);
    assert.deepEqual(await stored(id, 'description'), ['Deferred']);

    // A short one with a taken id, ending together with a good one: the good one is still written.
    const good = await agent.ops.startTask({ class: 'task', description: 'Good', project: 'default' }, async () => {}, {
      deferInsert: true,
    });
    const bad = await agent.ops.startTask(
      { id: slow.id, class: 'task', description: 'Taken', project: 'default' },
      async () => {},
      { deferInsert: true },
    );
    assert.equal(
      (await call(agent, 'GET', `/1.0/operations/${bad.id}/wait?timeout=5`)).json.metadata.status_code,
      200,
      'answered from memory',
    );
    await until(async () => (await stored(good.id, 'status_code'))[0] === 200, 'the good row of the batch');
    assert.deepEqual(await stored(slow.id, 'description'), ['Slow']);
  });

  test('a task whose insert fails is not started and startTask rejects', async () => {
    const agent = ctx.agent();
    const id = crypto.randomUUID();
    await agent.ops.startTask({ id, class: 'task', description: 'First', project: 'default' }, async () => {});
    let ran = false;
    await assert.rejects(
      agent.ops.startTask(
        { id, class: 'task', description: 'Duplicate', project: 'default' },
        async () => void (ran = true),
      ),
    );
    assert.equal(ran, false);
  });

  test('wait?timeout returns the still-running operation when the timeout passes; bad timeout → 400', async () => {
    const agent = ctx.agent();
    let release!: () => void;
    const op = await agent.ops.startTask(
      { class: 'task', description: 'Slow', project: 'default' },
      () => new Promise<void>((r) => (release = r)),
    );
    const t0 = Date.now();
    const res = await call(agent, 'GET', `/1.0/operations/${op.id}/wait?timeout=0.3`);
    assert.ok(Date.now() - t0 >= 250);
    assert.equal(res.json.metadata.status_code, 103);
    assert.equal((await call(agent, 'GET', `/1.0/operations/${op.id}/wait?timeout=abc`)).status, 400);
    release();
    assert.equal((await call(agent, 'GET', `/1.0/operations/${op.id}/wait?timeout=5`)).json.metadata.status_code, 200);
  });

  test('DELETE cancels a cancellable operation (Cancelling, then Cancelled); others → 400; unknown → 404', async () => {
    const agent = ctx.agent();
    const events = ctx.events();
    const op = await agent.ops.startTask(
      { class: 'task', description: 'Cancellable', project: 'default', mayCancel: true },
      ({ signal }) =>
        new Promise<void>((_, reject) =>
          signal.addEventListener('abort', () => setTimeout(() => reject(signal.reason), 50)),
        ),
    );
    const del = await call(agent, 'DELETE', `/1.0/operations/${op.id}`);
    assert.equal(del.status, 202);
    assert.equal(del.json.type, 'sync');
    const done = await call(agent, 'GET', `/1.0/operations/${op.id}/wait?timeout=5`);
    assert.equal(done.json.metadata.status_code, 401);
    assert.equal(done.json.metadata.status, 'Cancelled');
    await until(
      () => events.some((e) => e.metadata.id === op.id && e.metadata.status_code === 104),
      'a Cancelling event',
    );

    let release!: () => void;
    const fixed = await agent.ops.startTask(
      { class: 'task', description: 'Not cancellable', project: 'default' },
      () => new Promise<void>((r) => (release = r)),
    );
    const refused = await call(agent, 'DELETE', `/1.0/operations/${fixed.id}`);
    assert.equal(refused.status, 400);
    assert.equal(refused.json.type, 'error');
    release();
    assert.equal((await call(agent, 'DELETE', '/1.0/operations/00000000-0000-4000-8000-000000000000')).status, 404);
    assert.equal((await call(agent, 'GET', '/1.0/operations/not-a-uuid')).status, 404);
  });

  test('operation websockets: secrets are one-time; wrong or reused secrets → 403', async () => {
    const agent = ctx.agent();
    const op = await agent.ops.startTask(
      { class: 'websocket', description: 'Echo', project: 'default' },
      async ({ id }) => {
        await new Promise<void>((resolve) => {
          const secrets = agent.ops.websockets.register(id, ['0', 'control'], (fd, socket) => {
            const ws = socket as WebSocket;
            ws.on('message', (m) => ws.send(`${fd}:${m.toString()}`));
            if (fd === 'control') ws.on('close', () => resolve());
          });
          void agent.ops.startTask; // secrets handed out through metadata below
          pending.resolve(secrets);
        });
      },
    );
    const secrets = await pending.promise;
    await assert.rejects(openSocket(agent, `/1.0/operations/${op.id}/websocket?secret=nope`), /HTTP 403/);
    const ws0 = await openSocket(agent, `/1.0/operations/${op.id}/websocket?secret=${secrets['0']}`);
    const echoed = new Promise<string>((r) => ws0.once('message', (m) => r(m.toString())));
    ws0.send('hello');
    assert.equal(await echoed, '0:hello');
    await assert.rejects(openSocket(agent, `/1.0/operations/${op.id}/websocket?secret=${secrets['0']}`), /HTTP 403/);
    const ctl = await openSocket(agent, `/1.0/operations/${op.id}/websocket?secret=${secrets.control}`);
    ctl.close();
    ws0.close();
    assert.equal((await call(agent, 'GET', `/1.0/operations/${op.id}/wait?timeout=5`)).json.metadata.status_code, 200);
    // Secrets die with the operation.
    await assert.rejects(openSocket(agent, `/1.0/operations/${op.id}/websocket?secret=${secrets.control}`), /HTTP 403/);
  });
}
