import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Hono } from 'hono';
import { buildRoutingNow } from './build-routing.ts';

test('the routing table is built before the first request, and routes as before', async () => {
  const app = new Hono();
  app.get('/1.0/containers/:name', (c) => c.text(`container ${c.req.param('name')}`));
  app.get('/1.0', (c) => c.text('server'));
  assert.equal(app.router.name, 'SmartRouter', 'hono has not chosen its router yet');
  buildRoutingNow(app);
  assert.match(app.router.name, /^SmartRouter \+ \w+Router$/);
  assert.throws(() => app.get('/late', (c) => c.text('late')), 'no route is added after it');
  assert.equal(await (await app.request('/1.0/containers/c1')).text(), 'container c1');
  assert.equal(await (await app.request('/1.0')).text(), 'server');
  assert.equal((await app.request('/nope')).status, 404);
});
