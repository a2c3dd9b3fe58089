import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startDaemon, type Daemon } from '../support/daemon.ts';
import { subscribeEvents } from '../support/events.ts';
import { client, eventually, type Client } from '../support/http.ts';

describe('GET /1.0/events', () => {
  let d: Daemon;
  let api: Client;
  before(async () => {
    d = await startDaemon();
    api = client({ socketPath: d.socketPath });
  });
  after(async () => d?.destroy());

  test('lifecycle events for every profile change, in order, none lost', async () => {
    const sub = await subscribeEvents(d.socketPath, '?type=lifecycle');
    try {
      for (let i = 0; i < 40; i++) assert.equal((await api.post('/1.0/profiles', { name: `p${i}` })).status, 200);
      await api.patch('/1.0/profiles/p0', { description: 'changed' });
      await api.post('/1.0/profiles/p1', { name: 'p1b' });
      await api.delete('/1.0/profiles/p2');
      await eventually(() => sub.events.length >= 43, '43 lifecycle events');
      const actions = sub.events.map((e) => `${e.metadata.action} ${e.metadata.source}`);
      assert.deepEqual(
        actions.slice(0, 40),
        Array.from({ length: 40 }, (_, i) => `profile-created /1.0/profiles/p${i}`),
      );
      assert.deepEqual(actions.slice(40), [
        'profile-updated /1.0/profiles/p0',
        'profile-renamed /1.0/profiles/p1b',
        'profile-deleted /1.0/profiles/p2',
      ]);
      assert.deepEqual(sub.events[41].metadata.context, { old_name: 'p1' });
      for (const e of sub.events) {
        assert.equal(e.type, 'lifecycle');
        assert.ok(!Number.isNaN(Date.parse(e.timestamp)));
      }
    } finally {
      sub.close();
    }
  });

  test('the type filter: logging only gets log entries with level, message and string context', async () => {
    const logs = await subscribeEvents(d.socketPath, '?type=logging');
    try {
      await api.get('/1.0/profiles');
      const entry = await eventually(
        () => logs.events.find((e) => e.metadata.context?.url === '/1.0/profiles'),
        'a logging event for the request',
      );
      assert.equal(entry.type, 'logging');
      assert.equal(entry.metadata.level, 'debug');
      assert.equal(entry.metadata.message, 'Handling API request');
      assert.equal(entry.metadata.context.method, 'GET');
      for (const v of Object.values(entry.metadata.context)) assert.equal(typeof v, 'string');
      assert.ok(logs.events.every((e) => e.type === 'logging'));
    } finally {
      logs.close();
    }
  });

  test('no type filter = all types; an unknown type is refused; ?project= scopes lifecycle events', async () => {
    await assert.rejects(subscribeEvents(d.socketPath, '?type=bogus'), /HTTP 400/);
    await assert.rejects(subscribeEvents(d.socketPath, '?project=nope'), /HTTP 404/);
    await api.post('/1.0/projects', { name: 'ev' });
    const all = await subscribeEvents(d.socketPath);
    const scoped = await subscribeEvents(d.socketPath, '?type=lifecycle&project=ev');
    try {
      await api.post('/1.0/profiles', { name: 'in-default' });
      await api.post('/1.0/profiles?project=ev', { name: 'in-ev' });
      await eventually(
        () => all.events.some((e) => e.metadata.source === '/1.0/profiles/in-ev?project=ev'),
        'the ev event on the unfiltered stream',
      );
      const types = new Set(all.events.map((e) => e.type));
      assert.ok(types.has('lifecycle') && types.has('logging'));
      await eventually(() => scoped.events.length >= 1, 'the scoped event');
      assert.deepEqual(
        scoped.events.map((e) => e.metadata.source),
        ['/1.0/profiles/in-ev?project=ev'],
      );
      assert.equal(scoped.events[0].project, 'ev');
    } finally {
      all.close();
      scoped.close();
    }
  });

  test('operation events carry the full operation, which stays readable afterwards (how the lxc CLI waits)', async () => {
    const sub = await subscribeEvents(d.socketPath, '?type=operation');
    try {
      await api.post('/1.0/projects', { name: 'old' });
      await api.delete('/1.0/profiles/default?project=old').catch(() => {});
      // The lxc CLI's User-Agent: project rename answers with an operation (the spec lists it as async).
      const res = await api.post('/1.0/projects/old', { name: 'new' }, { 'User-Agent': 'Go-http-client/1.1' });
      assert.equal(res.status, 202, res.text);
      assert.equal(res.json.type, 'async');
      const id = res.json.metadata.id;
      assert.equal(res.headers.location, `/1.0/operations/${id}`);
      const done = await eventually(
        () => sub.events.find((e) => e.metadata.id === id && e.metadata.status_code === 200),
        'the Success event',
      );
      assert.equal(done.metadata.class, 'task');
      assert.deepEqual(done.metadata.resources, { projects: ['/1.0/projects/new'] });
      const op = await api.get(`/1.0/operations/${id}`);
      assert.equal(op.json.metadata.status, 'Success');
      assert.equal((await api.get('/1.0/projects/new')).status, 200);
    } finally {
      sub.close();
    }
  });

  test('a plain GET without upgrade is an error envelope', async () => {
    const r = await api.get('/1.0/events');
    assert.equal(r.status, 400);
    assert.equal(r.json.type, 'error');
  });
});
