import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { insertContainer, type ContainerInput } from '../../src/desired/containers.ts';
import { ConflictError, NotFoundError, StaleWriteError, ValidationError } from '../../src/desired/errors.ts';
import { parseCidr } from '../../src/util/ip-cidr.ts';
import {
  deleteNetworkRow,
  insertNetwork,
  listNetworks,
  markNetworkDeleting,
  mergeLeases,
  prepareNetwork,
  prepareNetworkUpdate,
  readNetwork,
  readNetworkById,
  renameNetwork,
  staticLeases,
  updateNetwork,
  type NetworkHostView,
  type NetworkInput,
} from '../../src/desired/networks.ts';
import { createProfile } from '../../src/desired/profiles.ts';
import { profiles } from '../../src/desired/schema/index.ts';
import { ensureDefaultProject } from '../../src/desired/projects.ts';
import { usedByReader } from '../../src/desired/used-by.ts';
import { rejection } from './helpers.ts';
import { openPgliteTarget, openPostgresTarget, type OpenTarget, type StoreTarget } from './targets.ts';

/** A host with eth0 (10.0.0.0/16 and a default route) and lo, vxlan but no gre. */
const host = (extra: { interfaces?: string[]; subnets?: string[] } = {}): NetworkHostView => ({
  interfaces: async () =>
    ['eth0', 'lo', ...(extra.interfaces ?? [])].map((name) => ({
      name,
      type: name === 'lo' ? 'loopback' : 'physical',
    })),
  usedSubnets: async () => ['0.0.0.0/0', '10.0.0.0/16', '127.0.0.0/8', 'fe80::/64', ...(extra.subnets ?? [])],
  probe: async (f) => (f === 'vxlan' ? { ok: true } : { ok: false, missing: [`${f} support`] }),
});
const ct = (
  devices: ContainerInput['devices'],
  profiles: string[] = [],
  config: Record<string, string> = {},
): ContainerInput => ({
  description: '',
  architecture: 'x86_64',
  ephemeral: false,
  profiles,
  config,
  devices,
});
const safe = { 'ipv4.nat': 'false', 'ipv6.address': 'none' };

async function refusedWith(
  p: Promise<unknown>,
  cls: new (...args: never[]) => Error,
  ...fragments: string[]
): Promise<void> {
  const e = await rejection(p);
  assert.ok(e instanceof cls, `expected ${cls.name}, got ${String(e)}`);
  for (const f of fragments) assert.ok((e as Error).message.includes(f), `"${(e as Error).message}" should name ${f}`);
}

function defineNetworkSuite(name: string, open: OpenTarget): void {
  describe(name, () => {
    let t: StoreTarget | undefined;
    const db = () => t!.database.db;
    const create = async (input: NetworkInput, h = host()) => insertNetwork(db(), await prepareNetwork(db(), input, h));
    before(async () => {
      t = await open();
      await ensureDefaultProject(db());
    });
    after(async () => t?.cleanup());

    test('create: defaults as LXD fills them, auto resolved to free subnets, type and name rules', async () => {
      const a = await create({ name: 'n16a' });
      assert.equal(a.type, 'bridge');
      assert.equal(a.generation, 1);
      assert.equal(a.config['ipv4.nat'], 'true');
      assert.equal(a.config['ipv6.nat'], 'true');
      const v4 = parseCidr(a.config['ipv4.address']!)!;
      assert.match(a.config['ipv4.address']!, /^10\.\d+\.\d+\.1\/24$/);
      assert.ok(!(v4.network >= 0x0a000000n && v4.network < 0x0a010000n), 'auto avoids the host subnet 10.0.0.0/16');
      assert.match(a.config['ipv6.address']!, /^fd42:[0-9a-f]{1,4}:[0-9a-f]{1,4}:[0-9a-f]{1,4}::1\/64$/);
      const b = await create({
        name: 'n16b',
        description: 'second',
        config: { 'ipv4.address': 'none', 'ipv6.address': 'none', 'ipv4.nat': '' },
      });
      assert.deepEqual(b.config, { 'ipv4.address': 'none', 'ipv6.address': 'none' });
      assert.equal(b.description, 'second');
      const given = await create({ name: 'n16c', config: { 'ipv4.address': '10.201.7.1/24', ...safe } });
      assert.deepEqual(
        given.config,
        { 'ipv4.address': '10.201.7.1/24', 'ipv4.nat': 'false', 'ipv6.address': 'none' },
        'no NAT default for a given subnet',
      );
      assert.deepEqual(
        (await listNetworks(db())).map((n) => n.name).filter((n) => n.startsWith('n16')),
        ['n16a', 'n16b', 'n16c'],
      );

      await refusedWith(create({ name: 'n16a' }), ConflictError, 'already exists');
      await refusedWith(create({ name: 'eth0' }), ConflictError, 'host interface');
      await refusedWith(create({ name: 'n16-way-too-long' }), ValidationError, '15 characters');
      await refusedWith(create({ name: 'n16.x' }), ValidationError, 'letters, digits');
      await refusedWith(create({ name: '..' }), ValidationError);
      await refusedWith(create({ name: '' }), ValidationError, 'required');
      await refusedWith(create({ name: 'n16m', type: 'macvlan' }), ValidationError, 'not supported', 'macvlan');
      await refusedWith(create({ name: 'n16u', config: { 'ipv4.colour': 'x' } }), ValidationError, '"ipv4.colour"');
      await refusedWith(
        create({
          name: 'n16g',
          config: { 'tunnel.t.protocol': 'gre', 'tunnel.t.local': '192.0.2.1', 'tunnel.t.remote': '192.0.2.2' },
        }),
        ValidationError,
        'gre support',
      );
    });

    test('a subnet overlapping another network or the host is refused naming both', async () => {
      await refusedWith(
        create({ name: 'n16o', config: { 'ipv4.address': '10.201.7.9/16', ...safe } }),
        ValidationError,
        '"ipv4.address"',
        '10.201.0.0/16',
        'network "n16c"',
      );
      await refusedWith(
        create({ name: 'n16o', config: { 'ipv4.address': '10.0.5.1/24', ...safe } }),
        ValidationError,
        '"ipv4.address"',
        "the host's subnet 10.0.0.0/16",
      );
      await refusedWith(
        create({ name: 'n16o', config: { 'ipv4.address': '10.210.0.1/24', 'ipv4.routes': '10.201.7.0/28', ...safe } }),
        ValidationError,
        '"ipv4.routes"',
        'n16c',
      );
      await refusedWith(
        create(
          { name: 'n16o', config: { 'ipv4.address': '10.202.0.1/24', ...safe } },
          host({ subnets: ['10.202.0.128/25'] }),
        ),
        ValidationError,
        '10.202.0.128/25',
      );
      // The host lists svcd's own bridges too: a network's own subnet does not block changing it.
      const c = await readNetwork(db(), 'n16c');
      const h = host({ interfaces: ['n16c'], subnets: ['10.201.7.0/24', '10.201.7.1/32'] });
      const next = await prepareNetworkUpdate(db(), c, { ...c.config, 'ipv4.dhcp.expiry': '2h' }, h);
      assert.equal(next['ipv4.address'], '10.201.7.1/24');
      await refusedWith(
        create({ name: 'n16p', config: { 'ipv4.address': '10.201.7.1/24', ...safe } }, h),
        ValidationError,
        'network "n16c"',
      );
    });

    test('update: conditional on the generation read; two updates from one read: exactly one wins', async () => {
      const c = await readNetwork(db(), 'n16c');
      const cfg = await prepareNetworkUpdate(db(), c, { ...c.config, 'ipv4.address': 'auto' }, host());
      assert.notEqual(cfg['ipv4.address'], 'auto');
      const results = await Promise.allSettled([
        updateNetwork(db(), c.id, { description: 'one', config: { ...c.config, 'user.who': 'one' } }, c.generation),
        updateNetwork(db(), c.id, { description: 'two', config: { ...c.config, 'user.who': 'two' } }, c.generation),
      ]);
      const won = results.filter((r) => r.status === 'fulfilled');
      const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
      assert.equal(won.length, 1, JSON.stringify(results));
      assert.ok(lost[0]!.reason instanceof StaleWriteError, String(lost[0]!.reason));
      const now = await readNetwork(db(), 'n16c');
      assert.equal(now.generation, c.generation + 1);
      assert.equal(now.config['user.who'], now.description);
      await refusedWith(updateNetwork(db(), c.id, { description: '', config: {} }, c.generation), StaleWriteError);
    });

    test('used_by, in-use refusals, rename and delete', async () => {
      const d = db();
      // A static address inside n16a's (auto-picked) subnet.
      const p3 = (await readNetwork(d, 'n16a')).config['ipv4.address']!.split('.').slice(0, 3).join('.');
      // Inserted as a row: device validation of `network` belongs to the container nic side.
      await d.insert(profiles).values({
        project: 'default',
        name: 'n16prof',
        devices: { eth0: { type: 'nic', nictype: 'bridged', network: 'n16b' } },
      });
      await insertContainer(
        d,
        'default',
        'n16ct',
        ct({ eth1: { type: 'nic', nictype: 'bridged', parent: 'n16a', 'ipv4.address': `${p3}.5` } }, ['n16prof'], {
          'volatile.eth1.hwaddr': '00:16:3e:00:00:01',
        }),
        { type: 'none' },
        'stopped',
      );
      await insertContainer(
        d,
        'default',
        'n16other',
        ct({ eth0: { type: 'nic', nictype: 'bridged', parent: 'br-host', hwaddr: '00:16:3e:00:00:09' } }),
        { type: 'none' },
        'stopped',
      );
      const r = usedByReader(d);
      assert.deepEqual(await r.network('n16a'), ['/1.0/containers/n16ct']);
      assert.deepEqual(
        await r.network('n16b'),
        ['/1.0/profiles/n16prof', '/1.0/containers/n16ct'],
        'a container counts through its profile',
      );
      assert.deepEqual(await r.network('br-host'), ['/1.0/containers/n16other']);
      assert.deepEqual(await r.network('n16c'), []);

      const statics = await staticLeases(d, 'n16a');
      assert.deepEqual(statics, [
        { hostname: 'n16ct', hwaddr: '00:16:3e:00:00:01', address: `${p3}.5`, type: 'static', location: 'none' },
      ]);
      const dyn = [
        {
          hostname: 'n16ct',
          hwaddr: '00:16:3E:00:00:01',
          address: `${p3}.77`,
          type: 'dynamic' as const,
          location: 'none',
        },
        { hostname: 'x', hwaddr: '00:16:3e:00:00:02', address: `${p3}.78`, type: 'dynamic' as const, location: 'none' },
      ];
      assert.deepEqual(
        mergeLeases(statics, dyn).map((l) => l.address),
        [`${p3}.5`, `${p3}.78`],
      );

      const a = await readNetwork(d, 'n16a');
      await refusedWith(markNetworkDeleting(d, a.id), ValidationError, 'in use', '/1.0/containers/n16ct');
      await refusedWith(renameNetwork(d, a.id, 'n16z', host()), ValidationError, 'in use');
      const b = await readNetwork(d, 'n16b');
      await refusedWith(markNetworkDeleting(d, b.id), ValidationError, '/1.0/profiles/n16prof');

      const c = await readNetwork(d, 'n16c');
      await refusedWith(renameNetwork(d, c.id, 'n16a', host()), ConflictError, 'already exists');
      await refusedWith(renameNetwork(d, c.id, 'eth0', host()), ConflictError, 'host interface');
      await refusedWith(renameNetwork(d, c.id, 'bad/name', host()), ValidationError);
      const renamed = await renameNetwork(d, c.id, 'n16r', host());
      assert.equal(renamed.id, c.id);
      assert.equal(renamed.generation, c.generation + 1);
      await refusedWith(readNetwork(d, 'n16c'), NotFoundError);

      const gone = await markNetworkDeleting(d, c.id);
      assert.ok(gone.deletingAt);
      assert.equal(gone.generation, renamed.generation + 1);
      await refusedWith(updateNetwork(d, c.id, { description: '', config: {} }, gone.generation), NotFoundError);
      await refusedWith(renameNetwork(d, c.id, 'n16s', host()), NotFoundError);
      await deleteNetworkRow(d, c.id);
      assert.equal(await readNetworkById(d, c.id), undefined);
      await refusedWith(markNetworkDeleting(d, c.id), NotFoundError);
    });

    test('race: deleting a network against a container or profile write that puts a nic on it: never both', async () => {
      const d = db();
      for (let i = 0; i < 12; i++) {
        const net = await create({
          name: `n16race${i}`,
          type: 'bridge',
          description: '',
          config: { ...safe, 'ipv4.address': 'auto' },
        });
        const nic = { eth0: { type: 'nic', network: net.name } };
        // As the API writes a container: in a transaction (with its operation).
        const write =
          i % 2 === 0
            ? d.transaction((tx) => insertContainer(tx, 'default', `n16rc${i}`, ct(nic), { type: 'none' }, 'stopped'))
            : createProfile(d, 'default', `n16rp${i}`, { description: '', config: {}, devices: nic });
        const [w, del] = await Promise.allSettled([write, markNetworkDeleting(d, net.id)]);
        const round = `round ${i}: ${JSON.stringify([w.status, del.status, (w as PromiseRejectedResult).reason?.message, (del as PromiseRejectedResult).reason?.message])}`;
        assert.equal([w, del].filter((r) => r.status === 'fulfilled').length, 1, round);
        if (w.status === 'rejected') {
          assert.ok(
            w.reason instanceof ValidationError && /being deleted|does not exist/.test(w.reason.message),
            round,
          );
          await deleteNetworkRow(d, net.id);
        } else {
          assert.ok(
            (del as PromiseRejectedResult).reason instanceof ValidationError &&
              /in use/.test((del as PromiseRejectedResult).reason.message),
            round,
          );
          assert.deepEqual(
            await usedByReader(d).network(net.name),
            [i % 2 === 0 ? `/1.0/containers/n16rc${i}` : `/1.0/profiles/n16rp${i}`],
            round,
          );
        }
      }
    });
  });
}

defineNetworkSuite('networks on PGlite', openPgliteTarget);
defineNetworkSuite('networks on PostgreSQL', openPostgresTarget);
