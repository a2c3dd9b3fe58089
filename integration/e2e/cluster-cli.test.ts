import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { formCluster, startClusterHosts, type TestCluster } from '../support/cluster.ts';
import { eventually } from '../support/http.ts';
import { lxcCli, type LxcCli } from '../support/lxc-cli.ts';
import { importTestImage, stopHosts, type Host } from '../support/two-hosts.ts';

/** Debian's lxc, unmodified, over a cluster of three svcd members on one database. */
describe('lxc over a cluster', { skip: !process.env.SVCD_TEST_PG_URL && 'SVCD_TEST_PG_URL unset' }, () => {
  let cl: TestCluster;
  let a: Host;
  let b: Host;
  let c: Host;
  let imgDir: string | undefined;
  let lxc: LxcCli;

  before(async () => {
    cl = await startClusterHosts(3);
    [a, b, c] = cl.hosts as [Host, Host, Host];
    ({ dir: imgDir } = await importTestImage(a, { alias: 'bb' }));
    await formCluster(a, [b, c]);
    lxc = await lxcCli(b.daemon.stateDir);
  });
  after(async () => {
    for (const n of ['clus-l1', 'clus-l2', 'clus-l3']) await lxc?.run(['delete', '--force', n]);
    await lxc?.cleanup();
    await stopHosts([a, b, c], [imgDir]);
    await cl?.drop();
  });

  test('lxc cluster list and show', async () => {
    const out = await lxc.ok(['cluster', 'list', '--format', 'csv']);
    const rows = out
      .trim()
      .split('\n')
      .map((l) => l.split(','));
    assert.deepEqual(
      rows.map((r) => [r[0], r[1]]),
      [
        ['a', `https://127.0.0.1:${a.port}`],
        ['b', `https://127.0.0.1:${b.port}`],
        ['c', `https://127.0.0.1:${c.port}`],
      ],
    );
    assert.ok(
      rows.every((r) => r.includes('ONLINE')),
      out,
    );
    assert.match(await lxc.ok(['cluster', 'show', 'c']), /server_name: c/);
  });

  test('lxc launch --target, and lxc list shows every member with its LOCATION', async () => {
    await lxc.ok(['launch', 'bb', 'clus-l1', '--target', 'c']);
    await lxc.ok(['init', 'bb', 'clus-l2', '--target', 'a']);
    const rows = (await lxc.ok(['list', '--format', 'csv', '-c', 'nsL']))
      .trim()
      .split('\n')
      .map((l) => l.split(','));
    assert.deepEqual(rows, [
      ['clus-l1', 'RUNNING', 'c'],
      ['clus-l2', 'STOPPED', 'a'],
    ]);
    // The default columns of a clustered server include LOCATION.
    assert.match(await lxc.ok(['list']), /LOCATION/);
    // Verbs on another member's container go there, exec's websockets too.
    assert.equal((await lxc.ok(['exec', 'clus-l1', '--', 'echo', 'from-c'])).trim(), 'from-c');
    assert.equal((await lxc.ok(['exec', 'clus-l1', '--', 'hostname'])).trim(), 'clus-l1');
    await lxc.ok(['file', 'push', '-', 'clus-l1/root/hello'], 'pushed through b\n');
    assert.equal(await lxc.ok(['file', 'pull', 'clus-l1/root/hello', '-']), 'pushed through b\n');
    await lxc.ok(['stop', 'clus-l1', '--force']);
    assert.equal((await c.api.get('/1.0/containers/clus-l1/state')).json.metadata.status, 'Stopped');
  });

  test('lxc storage create --target on each member, then without: one pool, Created on every member', async () => {
    for (const h of [a, b, c]) await lxc.ok(['storage', 'create', 'cli-two', 'dir', '--target', h.name]);
    assert.match(await lxc.ok(['storage', 'list', '--format', 'csv']), /cli-two,dir,.*PENDING/);
    await lxc.ok(['storage', 'create', 'cli-two', 'dir']);
    await eventually(
      async () =>
        (await a.api.get('/1.0/storage-pools/cli-two')).json.metadata.status === 'Created' ? true : undefined,
      'cli-two Created',
      20_000,
    );
    assert.match(await lxc.ok(['storage', 'show', 'cli-two', '--target', 'c']), /source: .*storage-pools\/cli-two/);
    await lxc.ok(['storage', 'delete', 'cli-two']);
  });

  test('lxc move --target moves a container to another member', async () => {
    // clus-l2 is stopped on a; lxc sends {name, migration: true, live: true} to ?target=b.
    await lxc.ok(['file', 'push', '-', 'clus-l2/root/moved'], 'before the move\n');
    await lxc.ok(['snapshot', 'clus-l2', 'snap0']);
    await lxc.ok(['move', 'clus-l2', '--target', 'b']);
    assert.equal((await lxc.ok(['list', 'clus-l2', '--format', 'csv', '-c', 'nsL'])).trim(), 'clus-l2,STOPPED,b');
    assert.match(await lxc.ok(['info', 'clus-l2']), /snap0/);
    await lxc.ok(['start', 'clus-l2']);
    assert.equal(await lxc.ok(['file', 'pull', 'clus-l2/root/moved', '-']), 'before the move\n');
    // Running: a live move is refused, naming --stateless; with it, the container is moved and runs there.
    const live = await lxc.run(['move', 'clus-l2', '--target', 'a']);
    assert.notEqual(live.code, 0);
    assert.match(live.stderr, /--stateless/);
    await lxc.ok(['move', 'clus-l2', '--target', 'a', '--stateless']);
    assert.equal((await lxc.ok(['list', 'clus-l2', '--format', 'csv', '-c', 'nsL'])).trim(), 'clus-l2,RUNNING,a');
    await lxc.ok(['stop', 'clus-l2', '--force']);
    // A copy placed on another member than the source's.
    await lxc.ok(['copy', 'clus-l2', 'clus-l3', '--target', 'c']);
    assert.equal((await lxc.ok(['list', 'clus-l3', '--format', 'csv', '-c', 'nsL'])).trim(), 'clus-l3,STOPPED,c');
    assert.match(await lxc.ok(['info', 'clus-l3']), /snap0/);
    await lxc.ok(['start', 'clus-l3']);
    assert.equal(await lxc.ok(['file', 'pull', 'clus-l3/root/moved', '-']), 'before the move\n');
    await lxc.ok(['delete', '--force', 'clus-l3']);
  });

  test('lxc cluster rename (refused for a running member) and remove --force of a dead member', async () => {
    await lxc.ok(['delete', 'clus-l1']);
    const running = await lxc.run(['cluster', 'rename', 'c', 'c2']);
    assert.notEqual(running.code, 0);
    assert.match(running.stderr, /running/);
    await c.daemon.kill();
    await eventually(
      async () => ((await lxc.ok(['cluster', 'list', '--format', 'csv'])).includes('OFFLINE') ? true : undefined),
      'c shown OFFLINE',
      30_000,
    );
    await lxc.ok(['cluster', 'rename', 'c', 'c2']);
    assert.match(await lxc.ok(['cluster', 'list', '--format', 'csv']), /^c2,.*OFFLINE/m);
    await lxc.ok(['cluster', 'remove', 'c2', '--force', '--yes']);
    assert.doesNotMatch(await lxc.ok(['cluster', 'list', '--format', 'csv']), /^c2?,/m);
  });
});
