import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Hono } from 'hono';
import type { AppEnv } from './context.ts';
import { ValidationError } from '../desired/errors.ts';
import { containerResources, instanceRoute, instanceTypeListed, instanceUrl } from './instance-collection.ts';

/** A bare app with one container route registered on both prefixes, answering what it would render. */
function app() {
  const a = new Hono<AppEnv>();
  a.use(async (c, next) => {
    c.set('caller', { level: 'trusted', protocol: 'unix' });
    await next();
  });
  a.onError((e, c) => c.json({ error: e.message }, 400));
  instanceRoute(a, '/:name/state', {
    GET: (c) =>
      c.json({
        url: instanceUrl(c, { name: c.req.param('name') ?? '', project: 'p1' }),
        resources: containerResources(c, { name: c.req.param('name') ?? '', project: 'default' }),
      }),
  });
  return a;
}

test('one handler on both prefixes; URLs and resources follow the collection asked through', async () => {
  const a = app();
  assert.deepEqual(await (await a.request('/1.0/containers/c1/state')).json(), {
    url: '/1.0/containers/c1?project=p1',
    resources: { containers: ['/1.0/containers/c1'] },
  });
  assert.deepEqual(await (await a.request('/1.0/instances/c1/state')).json(), {
    url: '/1.0/instances/c1?project=p1',
    resources: { containers: ['/1.0/containers/c1'], instances: ['/1.0/instances/c1'] },
  });
  // The method fallback is registered on both prefixes too.
  assert.equal((await a.request('/1.0/instances/c1/state', { method: 'DELETE' })).status, 400);
  assert.equal((await a.request('/1.0/virtual-machines/c1/state')).status, 404);
});

test('instance-type: containers listed for container or none, not for virtual-machine; others refused naming the key', () => {
  assert.equal(instanceTypeListed(undefined), true);
  assert.equal(instanceTypeListed(''), true);
  assert.equal(instanceTypeListed('container'), true);
  assert.equal(instanceTypeListed('virtual-machine'), false);
  assert.throws(
    () => instanceTypeListed('vm'),
    (e: unknown) => e instanceof ValidationError && /instance-type/.test(e.message),
  );
});
