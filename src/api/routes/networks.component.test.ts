/**
 * The networks routes in process on PGlite, with a host and a convergence of the test's own: what the
 * API itself decides (defaults, ETag, revert of a refused change, rename, in-use refusals, leases,
 * events) without bridges or the network reconciler.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { openDatabase } from '../../db/open-database.ts';
import type { Database } from '../../db/types.ts';
import { ensureDefaultProject } from '../../desired/projects.ts';
import { containers } from '../../desired/schema/index.ts';
import { insertContainer } from '../../desired/containers.ts';
import { createEventBus, type SvcEvent } from '../../events/index.ts';
import type { NetworkLease } from '../../host/network/types.ts';
import { Hono } from 'hono';
import type { AppEnv } from '../context.ts';
import { errorBody } from '../envelope.ts';
import { countQueries } from '../../test-support/count-queries.ts';
import { statusFor } from '../errors.ts';
import { registerNetworkRoutes } from './networks.ts';
import type { ApiDeps } from '../deps.ts';
import type { NetworkHost } from '../host-service.ts';

let dir: string;
let database: Database;
let app: Hono<AppEnv>;
const events: SvcEvent[] = [];
/** Convergence: `fail` makes the next waits report this host error. */
const converge = { fail: undefined as string | undefined, waited: [] as string[] };
const dynamic: NetworkLease[] = [];
const leaseDirs: string[] = [];

const host: NetworkHost = {
  interfaces: async () => [
    { name: 'eth0', type: 'physical' },
    { name: 'lo', type: 'loopback' },
  ],
  state: async (name) =>
    name === 'lo'
      ? {
          addresses: [],
          counters: { bytes_received: 1, bytes_sent: 1, packets_received: 1, packets_sent: 1 },
          hwaddr: '',
          mtu: 65536,
          state: 'up',
          type: 'loopback',
        }
      : undefined,
  leases: async (n) => (leaseDirs.push(n.dir), dynamic),
  probe: async (f) => ({ ok: false, missing: [`${f} here`] }),
  usedSubnets: async () => ['10.0.0.0/16'],
};

const call = async (method: string, url: string, body?: unknown, headers: Record<string, string> = {}) => {
  const res = await app.request(url, {
    method,
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, json: text ? JSON.parse(text) : undefined };
};
const SAFE = { 'ipv4.nat': 'false', 'ipv6.address': 'none' };

before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'svcd-net-'));
  database = await openDatabase({ stateDir: dir });
  await ensureDefaultProject(database.db);
  const bus = createEventBus({ location: 'none' });
  bus.subscribe({ types: new Set(['lifecycle']) }, (e) => events.push(e));
  const deps = {
    db: database.db,
    node: 'none',
    bus,
    stateDir: dir,
    networks: host,
    reconcile: { enqueue: () => {} },
    convergence: {
      wait: async (kind: string, _key: string, generation: number) => {
        converge.waited.push(`${kind}:${generation}`);
        return converge.fail ? { ok: false as const, error: converge.fail, terminal: true } : { ok: true as const };
      },
    },
  };
  // The network routes alone, with the app's error mapping.
  app = new Hono<AppEnv>();
  app.use(async (c, next) => {
    c.set('project', 'default');
    c.set('caller', { level: 'trusted', protocol: 'unix' });
    await next();
  });
  registerNetworkRoutes(app, deps as unknown as ApiDeps);
  app.onError((err, c) => {
    const { status, message, known } = statusFor(err);
    if (!known) console.error(err);
    return c.json(errorBody(status, message), status);
  });
});
after(async () => {
  await database?.close();
  await rm(dir, { recursive: true, force: true });
});

test('create fills LXD defaults, waits for the host, answers with Location; GET renders it with an ETag', async () => {
  const made = await call('POST', '/1.0/networks', {
    name: 'br16',
    description: 'd',
    config: { 'ipv6.address': 'none' },
  });
  assert.equal(made.status, 200, JSON.stringify(made.json));
  assert.equal(made.headers.get('location'), '/1.0/networks/br16');
  assert.deepEqual(converge.waited, ['network:1']);
  const got = await call('GET', '/1.0/networks/br16');
  const n = got.json.metadata;
  assert.equal(n.managed, true);
  assert.equal(n.status, 'Pending', 'no reconcile recorded yet');
  assert.match(n.config['ipv4.address'], /^10\.\d+\.\d+\.1\/24$/);
  assert.equal(n.config['ipv4.nat'], 'true');
  assert.ok(got.headers.get('etag'));
  const list = (await call('GET', '/1.0/networks')).json.metadata;
  assert.deepEqual(list, ['/1.0/networks/br16', '/1.0/networks/eth0', '/1.0/networks/lo']);
  assert.equal(events.at(-1)?.metadata.action, 'network-created');
});

test('a create the host refuses is torn down and answered with the host error', async () => {
  converge.fail = 'bridge br16x: no such luck';
  const res = await call('POST', '/1.0/networks', { name: 'br16x', config: SAFE });
  converge.fail = undefined;
  assert.equal(res.status, 500);
  assert.match(res.json.error, /no such luck/);
  // Marked for deletion (the reconciler removes the row): no longer listed or found.
  assert.equal((await call('GET', '/1.0/networks/br16x')).status, 404);
  assert.ok(!(await call('GET', '/1.0/networks')).json.metadata.includes('/1.0/networks/br16x'));
});

test('PATCH with If-Match; a stale ETag is 412; a change the host refuses is put back', async () => {
  const etag = (await call('GET', '/1.0/networks/br16')).headers.get('etag')!;
  assert.equal(
    (await call('PATCH', '/1.0/networks/br16', { config: { 'ipv4.dhcp.expiry': '2h' } }, { 'If-Match': etag })).status,
    200,
  );
  assert.equal((await call('PUT', '/1.0/networks/br16', { config: {} }, { 'If-Match': etag })).status, 412);
  converge.fail = 'mtu refused';
  const res = await call('PATCH', '/1.0/networks/br16', { config: { 'bridge.mtu': '9000' } });
  converge.fail = undefined;
  assert.match(res.json.error, /mtu refused/);
  const now = (await call('GET', '/1.0/networks/br16')).json.metadata;
  assert.equal(now.config['bridge.mtu'], undefined, 'the refused key was put back');
  assert.equal(now.config['ipv4.dhcp.expiry'], '2h');
  assert.equal(
    (await call('PATCH', '/1.0/networks/br16', { config: { 'ipv4.dhcp.ranges': '10.0.0.2-10.0.0.3' } })).status,
    400,
  );
  const put = await call('PUT', '/1.0/networks/br16', {
    description: 'new',
    config: { 'ipv4.address': now.config['ipv4.address'], ...SAFE },
  });
  assert.equal(put.status, 200, JSON.stringify(put.json));
  assert.deepEqual(
    (await call('GET', '/1.0/networks/br16')).json.metadata.config,
    { 'ipv4.address': now.config['ipv4.address'], ...SAFE },
    'PUT replaces the config',
  );
});

test('leases: static ones from container nics, then dnsmasq dynamic ones not already listed', async () => {
  const cfg = (await call('GET', '/1.0/networks/br16')).json.metadata.config['ipv4.address'] as string;
  const fixed = cfg.replace(/\.1\/24$/, '.50');
  const input = {
    description: '',
    architecture: 'x86_64',
    ephemeral: false,
    profiles: [],
    config: { 'volatile.eth0.hwaddr': '00:16:3e:00:00:50' },
  };
  await insertContainer(
    database.db,
    'default',
    'c16',
    { ...input, devices: { eth0: { type: 'nic', nictype: 'bridged', parent: 'br16', 'ipv4.address': fixed } } },
    { type: 'none' },
    'stopped',
  );
  dynamic.push(
    { hostname: 'c16', hwaddr: '00:16:3e:00:00:50', address: fixed, type: 'dynamic', location: 'none' },
    {
      hostname: 'other',
      hwaddr: '00:16:3e:00:00:51',
      address: cfg.replace(/\.1\/24$/, '.77'),
      type: 'dynamic',
      location: 'none',
    },
  );
  const leases = (await call('GET', '/1.0/networks/br16/leases')).json.metadata;
  assert.deepEqual(
    leases.map((l: NetworkLease) => [l.hostname, l.type]),
    [
      ['c16', 'static'],
      ['other', 'dynamic'],
    ],
  );
  assert.equal(leaseDirs.at(-1), path.join(dir, 'networks', 'br16'));
  assert.deepEqual((await call('GET', '/1.0/networks/br16')).json.metadata.used_by, ['/1.0/containers/c16']);

  assert.equal((await call('DELETE', '/1.0/networks/br16')).status, 400);
  assert.equal((await call('POST', '/1.0/networks/br16', { name: 'br16r' })).status, 400);
  await database.db.delete(containers);
});

test('rename 204 + Location, 409 on a taken name; delete; state and refusals on host interfaces', async () => {
  assert.equal((await call('POST', '/1.0/networks', { name: 'br16b', config: SAFE })).status, 200);
  assert.equal((await call('POST', '/1.0/networks/br16', { name: 'br16b' })).status, 409);
  assert.equal((await call('POST', '/1.0/networks/br16', { name: 'eth0' })).status, 409);
  const renamed = await call('POST', '/1.0/networks/br16', { name: 'br16r' });
  assert.equal(renamed.status, 204);
  assert.equal(renamed.headers.get('location'), '/1.0/networks/br16r');
  assert.deepEqual(events.find((e) => e.metadata.action === 'network-renamed')?.metadata.context, { old_name: 'br16' });
  for (const n of ['br16r', 'br16b']) assert.equal((await call('DELETE', `/1.0/networks/${n}`)).status, 200);
  assert.equal((await call('GET', '/1.0/networks/br16r')).status, 404);
  assert.equal(events.at(-1)?.metadata.action, 'network-deleted');

  assert.equal((await call('GET', '/1.0/networks/lo/state')).json.metadata.type, 'loopback');
  assert.equal((await call('GET', '/1.0/networks/eth1/state')).status, 404);
  assert.equal((await call('PATCH', '/1.0/networks/eth0', { config: {} })).status, 400);
  const eth0 = (await call('GET', '/1.0/networks/eth0')).json.metadata;
  assert.deepEqual(
    { managed: eth0.managed, type: eth0.type, config: eth0.config },
    { managed: false, type: 'physical', config: {} },
  );
});

test('a recursive list reads each table once, however many networks it renders', async () => {
  const queries = countQueries(database.db);
  const cost = async () => {
    queries.reset();
    const r = await call('GET', '/1.0/networks?recursion=1');
    assert.equal(r.status, 200);
    return { listed: (r.json.metadata as unknown[]).length, queries: queries.count };
  };
  try {
    assert.equal((await call('POST', '/1.0/networks', { name: 'brq0', config: SAFE })).status, 200);
    const few = await cost();
    for (const name of ['brq1', 'brq2', 'brq3'])
      assert.equal((await call('POST', '/1.0/networks', { name, config: SAFE })).status, 200);
    const more = await cost();
    assert.equal(more.listed, few.listed + 3);
    assert.equal(more.queries, few.queries, 'the same statements for 3 more networks');
  } finally {
    queries.restore();
  }
});
