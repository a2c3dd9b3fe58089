import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { useTempDatabase } from '../db/temp-database.ts';
import { bumpContainerAt, insertContainer, readContainer } from './containers.ts';
import { ValidationError } from './errors.ts';
import { networkDependents, nicsOnNetwork } from './network-nics.ts';
import { bumpContainersUsingProfile, createProfile, updateProfile } from './profiles.ts';
import { ensureDefaultProject } from './projects.ts';
import { networks } from './schema/index.ts';

const temp = useTempDatabase('svcd-network-nics-', ensureDefaultProject);

type Devices = Record<string, Record<string, string>>;
const input = (profiles: string[], devices: Devices = {}, config: Record<string, string> = {}) => ({
  description: '',
  architecture: 'x86_64',
  ephemeral: false,
  profiles,
  config,
  devices,
});
const rejects = (p: Promise<unknown>, re: RegExp) =>
  assert.rejects(p, (e: Error) => e instanceof ValidationError && re.test(e.message), re.source);

test('nics on managed networks: static addresses checked, hwaddrs generated once, profiles expanded', async () => {
  const { db } = temp.database;
  await db.insert(networks).values([
    {
      id: randomUUID(),
      name: 'n1',
      config: { 'ipv4.address': '10.55.1.1/24', 'ipv6.address': 'fd42:1::1/64', 'ipv6.dhcp.stateful': 'true' },
    },
    { id: randomUUID(), name: 'n2', config: { 'ipv4.address': 'none' } },
    {
      id: randomUUID(),
      name: 'n3',
      config: { 'ipv4.address': '10.55.3.1/24', 'ipv4.dhcp': 'false', 'ipv6.address': 'fd42:3::1/64' },
    },
  ]);
  const mk = (name: string, profiles: string[], devices: Devices = {}) =>
    insertContainer(db, 'default', name, input(profiles, devices), { type: 'none' }, 'stopped');

  const a = await mk('a', [], { eth0: { type: 'nic', network: 'n1', 'ipv4.address': '10.55.1.10' } });
  const mac = a.config['volatile.eth0.hwaddr']!;
  assert.match(mac, /^00:16:3e(:[0-9a-f]{2}){3}$/);
  // Outside the subnet, the gateway, taken, on an unmanaged parent, a missing network, a network without IPv4.
  await rejects(
    mk('b', [], { eth0: { type: 'nic', network: 'n1', 'ipv4.address': '10.55.2.10' } }),
    /outside network "n1"'s subnet 10\.55\.1\.1\/24/,
  );
  await rejects(mk('b', [], { eth0: { type: 'nic', network: 'n1', 'ipv4.address': '10.55.1.1' } }), /gateway/);
  await rejects(
    mk('b', [], { eth0: { type: 'nic', parent: 'n1', 'ipv4.address': '10.55.1.10' } }),
    /already used by container "a" \(project "default", device "eth0"\)/,
  );
  await rejects(
    mk('b', [], { eth0: { type: 'nic', parent: 'br0', 'ipv4.address': '10.55.1.11' } }),
    /needs a managed network as parent; "br0" is not one/,
  );
  await rejects(mk('b', [], { eth0: { type: 'nic', network: 'nope' } }), /network "nope" does not exist/);
  await rejects(
    mk('b', [], { eth0: { type: 'nic', network: 'n2', 'ipv4.address': '10.0.0.2' } }),
    /has no IPv4 subnet/,
  );
  await rejects(mk('b', [], { eth0: { type: 'nic', network: 'n1', 'ipv6.address': 'fd42:2::5' } }), /outside/);
  // No DHCP to reserve the address in (LXD's rule): ipv4.dhcp off; IPv6 without stateful DHCPv6.
  await rejects(
    mk('b', [], { eth0: { type: 'nic', network: 'n3', 'ipv4.address': '10.55.3.9' } }),
    /cannot specify "ipv4\.address" when DHCP is disabled on network "n3"/,
  );
  await rejects(
    mk('b', [], { eth0: { type: 'nic', network: 'n3', 'ipv6.address': 'fd42:3::9' } }),
    /cannot specify "ipv6\.address" when DHCP or "ipv6\.dhcp\.stateful" are disabled/,
  );

  // Its own address is no conflict on a later write; the volatile hwaddr is kept.
  const a2 = await bumpContainerAt(db, a.id, a.generation, {
    profiles: [],
    config: a.config,
    devices: { ...a.devices, eth1: { type: 'nic', parent: 'br0', hwaddr: '00:16:3e:00:00:09' } },
  });
  assert.equal(a2.config['volatile.eth0.hwaddr'], mac);
  assert.equal(a2.config['volatile.eth1.hwaddr'], undefined, 'a nic with its own hwaddr gets no volatile one');
  // A nic removed takes its volatile hwaddr along.
  const a3 = await bumpContainerAt(db, a.id, a2.generation, {
    profiles: [],
    config: a2.config,
    devices: { eth1: a2.devices.eth1! },
  });
  assert.equal(a3.config['volatile.eth0.hwaddr'], undefined);
  const a4 = await bumpContainerAt(db, a.id, a3.generation, {
    profiles: [],
    config: a3.config,
    devices: { eth0: { type: 'nic', network: 'n1', 'ipv4.address': '10.55.1.10' } },
  });

  // A profile's nic: its containers get their hwaddr when the profile gains it; two containers cannot share its static address.
  await createProfile(db, 'default', 'net', { description: '', config: {}, devices: {} });
  const c = await mk('c', ['net']);
  const d = await mk('d', ['net']);
  assert.equal(c.config['volatile.eth1.hwaddr'], undefined);
  await db.transaction(async (tx) => {
    await updateProfile(tx, 'default', 'net', {
      description: '',
      config: {},
      devices: { eth1: { type: 'nic', network: 'n1' } },
    });
    await bumpContainersUsingProfile(tx, 'default', 'net');
  });
  const cMac = (await readContainer(db, 'default', 'c')).config['volatile.eth1.hwaddr'];
  const dMac = (await readContainer(db, 'default', 'd')).config['volatile.eth1.hwaddr'];
  assert.ok(cMac && dMac && cMac !== dMac, 'each container its own MAC');
  await rejects(
    updateProfile(db, 'default', 'net', {
      description: '',
      config: {},
      devices: { eth1: { type: 'nic', network: 'n1', 'ipv4.address': '10.55.1.20' } },
    }),
    /already used by container/,
  );

  const onN1 = await nicsOnNetwork(db, 'n1');
  assert.deepEqual(
    onN1.map((n) => [n.containerName, n.device, n.hwaddr, n.ipv4 ?? '']),
    [
      ['a', 'eth0', a4.config['volatile.eth0.hwaddr'], '10.55.1.10'],
      ['c', 'eth1', cMac, ''],
      ['d', 'eth1', dMac, ''],
    ],
  );
  assert.deepEqual(new Set(await networkDependents(db, 'n1')), new Set([a.id, c.id, d.id]));
  assert.deepEqual(await networkDependents(db, 'n2'), []);
});

test('t17 a physical parent is held by one container at a time (through profiles too); its own later writes pass; no volatile MAC', async () => {
  const { db } = temp.database;
  const mk = (name: string, profiles: string[], devices: Devices = {}) =>
    insertContainer(db, 'default', name, input(profiles, devices), { type: 'none' }, 'stopped');
  const p = await mk('p1', [], { f0: { type: 'nic', nictype: 'physical', parent: 't17p9' } });
  assert.equal(p.config['volatile.f0.hwaddr'], undefined);
  await rejects(
    mk('p2', [], { f: { type: 'nic', nictype: 'physical', parent: 't17p9' } }),
    /Device "f" \(nic\): invalid "parent": host interface "t17p9" is already used by container "p1" \(project "default", device "f0"\)/,
  );
  await rejects(
    mk('p2', [], {
      m: { type: 'nic', nictype: 'macvlan', parent: 't17p9' },
      f: { type: 'nic', nictype: 'physical', parent: 't17p9' },
    }),
    /already used by container "p1"/,
  );
  await createProfile(db, 'default', 't17phys', {
    description: '',
    config: {},
    devices: { f: { type: 'nic', nictype: 'physical', parent: 't17p9' } },
  });
  await rejects(mk('p2', ['t17phys']), /already used by container "p1"/);
  await bumpContainerAt(db, p.id, p.generation, {
    profiles: [],
    config: p.config,
    devices: { ...p.devices, m: { type: 'nic', nictype: 'macvlan', parent: 'eno1' } },
  });
  // A macvlan on another container's physical parent is the kernel's business (refused at its start: the parent is gone).
  await mk('p3', [], { m: { type: 'nic', nictype: 'macvlan', parent: 'eno1' } });
});
