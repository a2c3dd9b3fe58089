import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { startBusyboxDaemon, teardownContainers, waitOp } from '../support/container-env.ts';
import type { Daemon } from '../support/daemon.ts';
import { expectError, type Client } from '../support/http.ts';
import { lxcCli, type LxcCli } from '../support/lxc-cli.ts';

/**
 * The container API served under /1.0/instances as well as /1.0/containers, against the daemon with real
 * containers: the same objects (type "container", same ETag) through both, URLs rendered in the collection
 * asked through, LXD's operation resources, virtual machines refused with a 400 naming the key.
 */
describe('/1.0/instances: the container API under LXD 4 paths', () => {
  const tag = randomBytes(3).toString('hex');
  const a = `inst-a-${tag}`;
  const b = `inst-b-${tag}`;
  const proj = `inst-p-${tag}`;
  let d: Daemon | undefined;
  let api: Client | undefined;
  let imgDir: string | undefined;
  let lxc: LxcCli | undefined;

  before(async () => {
    ({ d, api, imgDir } = await startBusyboxDaemon());
    lxc = await lxcCli(d.stateDir);
  });
  after(async () => {
    await lxc?.cleanup();
    await api?.delete(`/1.0/projects/${proj}`).catch(() => {});
    await teardownContainers(d, api, [imgDir]);
  });

  const names = async (path: string) => (await api!.get(path)).json.metadata as string[];

  test("instances is announced, and Debian's lxc then speaks /1.0/instances", async () => {
    assert.ok(((await api!.get('/1.0')).json.metadata.api_extensions as string[]).includes('instances'));
    const r = await lxc!.run(['--debug', 'list', '--format', 'csv']);
    assert.equal(r.code, 0, r.stderr);
    const urls = [...r.stderr.matchAll(/url="?([^"\s]+)/g)].map((m) => m[1]!);
    assert.ok(
      urls.some((u) => u.includes('/1.0/instances?')),
      r.stderr,
    );
    assert.ok(!urls.some((u) => u.includes('/1.0/containers')), r.stderr);
  });

  test('create through either collection; operation resources as LXD names them', async () => {
    const viaInstances = await waitOp(
      api!,
      await api!.post('/1.0/instances', { name: a, type: 'container', source: { type: 'image', alias: 'bb' } }),
    );
    assert.deepEqual(viaInstances.resources, {
      containers: [`/1.0/containers/${a}`],
      instances: [`/1.0/instances/${a}`],
    });
    const viaContainers = await waitOp(
      api!,
      await api!.post('/1.0/containers', { name: b, source: { type: 'image', alias: 'bb' } }),
    );
    assert.deepEqual(viaContainers.resources, { containers: [`/1.0/containers/${b}`] });
  });

  test('a virtual machine, or another type, is a 400 naming "type", and nothing is created', async () => {
    const before = await names('/1.0/instances');
    for (const type of ['virtual-machine', 'vm']) {
      for (const path of ['/1.0/instances', '/1.0/containers']) {
        const r = await api!.post(path, { name: `inst-vm-${tag}`, type, source: { type: 'none' } });
        assert.match(expectError(r, 400), /"type"/);
      }
    }
    assert.deepEqual(await names('/1.0/instances'), before);
    assert.equal((await api!.get(`/1.0/instances/inst-vm-${tag}`)).status, 404);
  });

  test('lists: URLs in the collection asked through, recursion, filter and instance-type', async () => {
    assert.deepEqual((await names('/1.0/instances')).sort(), [`/1.0/instances/${a}`, `/1.0/instances/${b}`]);
    assert.deepEqual((await names('/1.0/containers')).sort(), [`/1.0/containers/${a}`, `/1.0/containers/${b}`]);
    const full = (await api!.get('/1.0/instances?recursion=1')).json.metadata as { name: string; type: string }[];
    assert.deepEqual(full.map((x) => [x.name, x.type]).sort(), [
      [a, 'container'],
      [b, 'container'],
    ]);
    const two = (await api!.get('/1.0/instances?recursion=2')).json.metadata as { name: string; state: unknown }[];
    assert.equal(two.length, 2);
    assert.ok(two.every((x) => x.state && typeof x.state === 'object'));
    assert.deepEqual(await names(`/1.0/instances?filter=${encodeURIComponent(`name eq ${a}`)}`), [
      `/1.0/instances/${a}`,
    ]);
    assert.equal((await names('/1.0/instances?instance-type=container')).length, 2);
    assert.deepEqual(await names('/1.0/instances?instance-type=virtual-machine'), []);
    assert.deepEqual(await names('/1.0/instances?instance-type=virtual-machine&recursion=1'), []);
    assert.match(expectError(await api!.get('/1.0/instances?instance-type=bogus'), 400), /instance-type/);
  });

  test('one object through both paths: same body and ETag, type container; PATCH through one shows in the other', async () => {
    const i = await api!.get(`/1.0/instances/${a}`);
    const c = await api!.get(`/1.0/containers/${a}`);
    assert.equal(i.status, 200, i.text);
    assert.equal(i.json.metadata.type, 'container');
    assert.equal(i.headers.etag, c.headers.etag);
    assert.deepEqual(i.json.metadata, c.json.metadata);
    const patched = await api!.patch(`/1.0/instances/${a}`, { config: { 'user.via': 'instances' } });
    assert.equal(patched.status, 200, patched.text);
    assert.equal((await api!.get(`/1.0/containers/${a}`)).json.metadata.config['user.via'], 'instances');
    // If-Match holds across the two paths: the ETag is the object's, not the path's.
    const stale = await api!.put(`/1.0/containers/${a}`, { config: {} }, { 'If-Match': i.headers.etag as string });
    expectError(stale, 412);
    // A method a path does not have names the allowed ones, as under /1.0/containers.
    assert.match(expectError(await api!.delete('/1.0/instances'), 400), /allowed: GET, POST/);
  });

  test('state, exec with recorded output, files, logs and metadata through /1.0/instances', async () => {
    const start = await waitOp(api!, await api!.put(`/1.0/instances/${a}/state`, { action: 'start', timeout: 30 }));
    assert.deepEqual(start.resources.instances, [`/1.0/instances/${a}`]);
    assert.equal((await api!.get(`/1.0/instances/${a}/state`)).json.metadata.status, 'Running');
    const ex = await waitOp(
      api!,
      await api!.post(`/1.0/instances/${a}/exec`, {
        command: ['sh', '-c', 'echo out-$((6*7))'],
        'wait-for-websocket': false,
        'record-output': true,
      }),
    );
    assert.equal(ex.metadata.return, 0);
    assert.equal(ex.metadata.output['1'], `/1.0/instances/${a}/logs/exec_${ex.id}.stdout`);
    assert.equal((await api!.get(ex.metadata.output['1'])).text, 'out-42\n');
    assert.ok((await names(`/1.0/instances/${a}/logs`)).includes(ex.metadata.output['1']));
    assert.ok((await names(`/1.0/containers/${a}/logs`)).includes(`/1.0/containers/${a}/logs/exec_${ex.id}.stdout`));
    const file = `/1.0/instances/${a}/files?path=${encodeURIComponent('/root/via-instances')}`;
    assert.equal((await api!.post(file, 'hello', { 'Content-Type': 'application/octet-stream' })).status, 200);
    const back = await api!.get(`/1.0/containers/${a}/files?path=${encodeURIComponent('/root/via-instances')}`);
    assert.equal(back.text, 'hello');
    assert.equal((await api!.delete(file)).status, 200);
    assert.equal((await api!.get(file)).status, 404);
    const md = await api!.get(`/1.0/instances/${a}/metadata`);
    assert.equal(md.status, 200, md.text);
    assert.equal(typeof md.json.metadata.templates, 'object');
    assert.equal((await api!.get(`/1.0/instances/${a}/metadata/templates`)).status, 200);
    await waitOp(api!, await api!.put(`/1.0/instances/${a}/state`, { action: 'stop', force: true }));
  });

  test('snapshots and backups through /1.0/instances name /1.0/instances URLs; /1.0/containers keeps its own', async () => {
    const snap = await waitOp(api!, await api!.post(`/1.0/instances/${b}/snapshots`, { name: 's0' }));
    assert.deepEqual(snap.resources.instances, [`/1.0/instances/${b}`]);
    assert.deepEqual(await names(`/1.0/instances/${b}/snapshots`), [`/1.0/instances/${b}/snapshots/s0`]);
    assert.deepEqual(await names(`/1.0/containers/${b}/snapshots`), [`/1.0/containers/${b}/snapshots/s0`]);
    assert.equal((await api!.get(`/1.0/instances/${b}/snapshots/s0`)).json.metadata.name, 's0');
    const backup = await waitOp(api!, await api!.post(`/1.0/instances/${b}/backups`, { name: 'bk0' }));
    assert.deepEqual(backup.resources.backups, ['/1.0/backups/bk0']);
    assert.deepEqual(backup.resources.instances, [`/1.0/instances/${b}`]);
    assert.deepEqual(await names(`/1.0/instances/${b}/backups`), [`/1.0/instances/${b}/backups/bk0`]);
    assert.deepEqual(await names(`/1.0/containers/${b}/backups`), [`/1.0/containers/${b}/backups/bk0`]);
    const exp = await api!.get(`/1.0/instances/${b}/backups/bk0/export`);
    assert.equal(exp.status, 200);
    assert.ok((exp.body?.length ?? 0) > 0);
    await waitOp(api!, await api!.delete(`/1.0/instances/${b}/backups/bk0`));
    await waitOp(api!, await api!.delete(`/1.0/instances/${b}/snapshots/s0`));
    assert.deepEqual(await names(`/1.0/instances/${b}/snapshots`), []);
  });

  test('used_by names /1.0/containers URLs (as before), each of which resolves under /1.0/instances too', async () => {
    const usedBy = (await api!.get('/1.0/profiles/default')).json.metadata.used_by as string[];
    assert.deepEqual(usedBy.sort(), [`/1.0/containers/${a}`, `/1.0/containers/${b}`]);
    for (const u of usedBy) {
      const r = await api!.get(u.replace('/1.0/containers/', '/1.0/instances/'));
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.metadata.type, 'container');
    }
  });

  test('projects: ?project= on URLs under /1.0/instances', async () => {
    assert.equal(
      (
        await api!.post('/1.0/projects', {
          name: proj,
          config: { 'features.profiles': 'false', 'features.images': 'false' },
        })
      ).status,
      200,
    );
    const op = await waitOp(
      api!,
      await api!.post(`/1.0/instances?project=${proj}`, { name: 'pc', source: { type: 'image', alias: 'bb' } }),
    );
    assert.deepEqual(op.resources.instances, [`/1.0/instances/pc?project=${proj}`]);
    assert.deepEqual(await names(`/1.0/instances?project=${proj}`), [`/1.0/instances/pc?project=${proj}`]);
    await waitOp(api!, await api!.delete(`/1.0/instances/pc?project=${proj}`));
    assert.deepEqual(await names(`/1.0/instances?project=${proj}`), []);
  });

  test('rename and delete through /1.0/instances', async () => {
    const renamed = `${b}-r`;
    const op = await waitOp(api!, await api!.post(`/1.0/instances/${b}`, { name: renamed }));
    assert.deepEqual(op.resources.instances, [`/1.0/instances/${renamed}`]);
    assert.equal((await api!.get(`/1.0/instances/${renamed}`)).status, 200);
    assert.equal((await api!.get(`/1.0/containers/${b}`)).status, 404);
    await waitOp(api!, await api!.delete(`/1.0/instances/${renamed}`));
    assert.deepEqual(await names('/1.0/instances'), [`/1.0/instances/${a}`]);
  });
});
