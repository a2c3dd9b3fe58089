import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { useTempDatabase } from '../db/temp-database.ts';
import { insertContainer } from './containers.ts';
import { ValidationError } from './errors.ts';
import { ensureDefaultProject } from './projects.ts';
import { conflictIn, type BoundSocket } from '../host/proxy/bound-sockets.ts';
import { checkContainerProxies, type ListenQuery } from './proxy-checks.ts';
import { eq } from 'drizzle-orm';
import { createProfile, readProfile, updateProfile } from './profiles.ts';
import { containers, networks, storagePools } from './schema/index.ts';

const temp = useTempDatabase('svcd-proxy-checks-', ensureDefaultProject);

type Devices = Record<string, Record<string, string>>;
const input = (devices: Devices) => ({
  description: '',
  architecture: 'x86_64',
  ephemeral: false,
  profiles: [],
  config: {},
  devices,
});
const rejects = (p: Promise<unknown>, re: RegExp) =>
  assert.rejects(p, (e: Error) => e instanceof ValidationError && re.test(e.message), re.source);
/** A probe over a fixed list of bound sockets (the host's: bound-sockets.test.ts). */
const probeOf = (sockets: BoundSocket[]) => async (q: ListenQuery) => conflictIn(sockets, q);
const proxy = (listen: string, extra: Record<string, string> = {}) => ({
  type: 'proxy',
  listen,
  connect: 'tcp:127.0.0.1:80',
  ...extra,
});

test('t17 proxy cross-checks: nat to a static managed address, listen used by another container, bound on the host', async () => {
  const { db } = temp.database;
  await db.insert(networks).values({ id: randomUUID(), name: 't17n', config: { 'ipv4.address': '10.58.1.1/24' } });
  const eth0 = { type: 'nic', network: 't17n', 'ipv4.address': '10.58.1.10' };
  const nat = (connect: string) => ({ type: 'proxy', nat: 'true', listen: 'tcp:127.0.0.1:8080', connect });

  await checkContainerProxies(db, undefined, { eth0, web: nat('tcp:10.58.1.10:80') });
  await checkContainerProxies(db, undefined, { eth0, web: nat('tcp:0.0.0.0:80') });
  await rejects(
    checkContainerProxies(db, undefined, { eth0, web: nat('tcp:10.58.1.11:80') }),
    /Device "web" \(proxy\): "nat" needs "connect" to be the static "ipv4.address"/,
  );
  await rejects(
    checkContainerProxies(db, undefined, {
      eth0: { type: 'nic', parent: 'br0', 'ipv4.address': '10.58.1.10' },
      web: nat('tcp:10.58.1.10:80'),
    }),
    /static "ipv4.address"/,
  );
  await rejects(checkContainerProxies(db, undefined, { web: nat('tcp:0.0.0.0:80') }), /static "ipv4.address"/);

  const a = await insertContainer(
    db,
    'default',
    'a',
    input({ web: proxy('tcp:127.0.0.1:8080-8090') }),
    { type: 'none' },
    'stopped',
  );
  await rejects(
    checkContainerProxies(db, undefined, { x: proxy('tcp:127.0.0.1:8085') }),
    /Device "x" \(proxy\): "listen" tcp:127\.0\.0\.1:8085 is already used by device "web" of container "a"/,
  );
  await rejects(checkContainerProxies(db, undefined, { x: proxy('tcp:0.0.0.0:8090') }), /already used by device "web"/);
  await checkContainerProxies(db, undefined, { x: proxy('udp:127.0.0.1:8085', { connect: 'udp:127.0.0.1:53' }) });
  await checkContainerProxies(db, undefined, { x: proxy('tcp:127.0.0.2:8085') });
  await checkContainerProxies(db, undefined, { x: proxy('tcp:127.0.0.1:8085', { bind: 'container' }) });
  // Its own devices are not the other container's: a changed listen of "a" is checked against the host only.
  await checkContainerProxies(db, a, { web: proxy('tcp:127.0.0.1:8085') });
  await rejects(
    checkContainerProxies(
      db,
      a,
      { web: proxy('tcp:127.0.0.1:8085') },
      probeOf([{ protocol: 'tcp', address: '127.0.0.1', port: 8085 }]),
    ),
    /already in use on the host/,
  );
});

test('t17 proxy cross-checks: a socket bound on the host, except one its own proxy holds', async () => {
  const { db } = temp.database;
  const bound: BoundSocket[] = [
    { protocol: 'tcp', address: '0.0.0.0', port: 9100 },
    { protocol: 'udp', address: '127.0.0.1', port: 9101 },
  ];
  const sockets = probeOf(bound);
  await rejects(
    checkContainerProxies(db, undefined, { x: proxy('tcp:127.0.0.1:9100') }, sockets),
    /Device "x" \(proxy\): "listen" tcp:127\.0\.0\.1:9100 is already in use on the host/,
  );
  await rejects(
    checkContainerProxies(db, undefined, { x: proxy('udp:0.0.0.0:9101', { connect: 'udp:127.0.0.1:53' }) }, sockets),
    /udp:0\.0\.0\.0:9101 is already in use/,
  );
  await checkContainerProxies(db, undefined, { x: proxy('tcp:127.0.0.1:9101') }, sockets);
  // Its own forwarder holds 9102: an update keeping that listen is not refused.
  const held = [...bound, { protocol: 'tcp' as const, address: '127.0.0.1', port: 9102 }];
  const b = await insertContainer(
    db,
    'default',
    'b',
    input({ web: proxy('tcp:127.0.0.1:9102') }),
    { type: 'none' },
    'stopped',
  );
  await checkContainerProxies(
    db,
    b,
    { web: proxy('tcp:127.0.0.1:9102'), other: proxy('tcp:127.0.0.1:9200') },
    probeOf(held),
  );
  await rejects(
    checkContainerProxies(db, b, { web2: proxy('tcp:127.0.0.1:9102') }, probeOf(held)),
    /already in use on the host/,
  );
  // An address none of the host's interfaces has.
  const notLocal = async () => ({ port: 9300, why: 'not a local address' as const });
  await rejects(
    checkContainerProxies(db, undefined, { x: proxy('tcp:192.0.2.7:9300') }, notLocal),
    /Device "x" \(proxy\): "listen" tcp:192\.0\.2\.7:9300: 192\.0\.2\.7 is not an address of the host/,
  );
});

test('t17 proxy cross-checks at a profile write: a host listen shared by two containers through the profile, a nat address they lack', async () => {
  const { db } = temp.database;
  await db.insert(storagePools).values({ name: 't17pool', driver: 'dir', config: {} });
  const root = { type: 'disk', path: '/', pool: 't17pool' };
  await createProfile(db, 'default', 't17p', { description: '', config: {}, devices: {} });
  await insertContainer(db, 'default', 'pa', { ...input({ root }), profiles: ['t17p'] }, { type: 'none' }, 'stopped');
  // One user: a proxy in the profile is fine.
  await updateProfile(db, 'default', 't17p', {
    description: '',
    config: {},
    devices: { web: proxy('tcp:127.0.0.1:9300') },
  });
  await insertContainer(
    db,
    'default',
    'pb',
    { ...input({ root }), profiles: ['default'] },
    { type: 'none' },
    'stopped',
  );
  await db
    .update(containers)
    .set({ profiles: ['t17p'] })
    .where(eq(containers.name, 'pb'));
  // Two users of one host listen address: refused, nothing written.
  const before = await readProfile(db, 'default', 't17p');
  await rejects(
    updateProfile(db, 'default', 't17p', {
      description: '',
      config: {},
      devices: { web: proxy('tcp:127.0.0.1:9301') },
    }),
    /^At least one container relies on this profile: \/1\.0\/containers\/p[ab] would be invalid: Device "web" \(proxy\): "listen" tcp:127\.0\.0\.1:9301 is already used by device "web" of container "p[ab]"/,
  );
  assert.deepEqual((await readProfile(db, 'default', 't17p')).devices, before.devices);
  await rejects(
    updateProfile(db, 'default', 't17p', {
      description: '',
      config: {},
      devices: { web: { type: 'proxy', nat: 'true', listen: 'tcp:127.0.0.1:9302', connect: 'tcp:10.9.9.9:80' } },
    }),
    /would be invalid: Device "web" \(proxy\): "nat" needs "connect"/,
  );
  // A container write meets a listen that another container has only through its profile.
  await rejects(
    checkContainerProxies(db, undefined, { x: proxy('tcp:127.0.0.1:9300') }),
    /"listen" tcp:127\.0\.0\.1:9300 is already used by device "web" of container "p[ab]"/,
  );
  await checkContainerProxies(db, undefined, { x: proxy('tcp:127.0.0.1:9304') });
  // bind=container listens inside each container: no clash.
  await updateProfile(db, 'default', 't17p', {
    description: '',
    config: {},
    devices: { web: proxy('tcp:127.0.0.1:9303', { bind: 'container' }) },
  });
  await checkContainerProxies(db, undefined, { x: proxy('tcp:127.0.0.1:9300') });
});
