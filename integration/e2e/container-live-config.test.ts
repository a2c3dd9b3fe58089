/**
 * Desired config reaches a running container without a restart, and the operation's success means it
 * has: cgroup limits (read from the container's cgroup files right after the operation ends), disks and
 * unix device nodes mounted and unmounted inside it (read from /proc/<init>/mountinfo and its root),
 * profile changes reaching every running user of the profile, drift put back, and the keys that need a
 * restart reported as `pending_restart` in the state until the restart. The same with the real `lxc` CLI.
 * One unprivileged container per test group; `after` removes them, the host directories, the custom volume
 * and this daemon's lxc-monitord, also when a test failed.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readFile, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { cgroupFile } from '../support/cgroup.ts';
import { teardownContainers, uploadBusybox, waitOp as waitOpOf } from '../support/container-env.ts';
import { startDaemon, type Daemon } from '../support/daemon.ts';
import { client, eventually, expectError, type Client } from '../support/http.ts';
import { lxcCli, type LxcCli } from '../support/lxc-cli.ts';
import { ensureRootSubids, lxcSkipReason } from '../support/lxc-host.ts';

const skip = await lxcSkipReason();
if (skip) console.log(`# skipping live config e2e tests: ${skip}`);

type Reply = { status: number; json: any; text: string };
const UNLIMITED = 2 ** 62;

/** Mount points inside the container whose init is `pid`, with whether each is read-only. */
async function mountsOf(pid: number): Promise<Map<string, boolean>> {
  const out = new Map<string, boolean>();
  for (const line of (await readFile(`/proc/${pid}/mountinfo`, 'utf8')).split('\n')) {
    const f = line.split(' ');
    if (f.length > 5) out.set(f[4]!, f[5]!.split(',').includes('ro'));
  }
  return out;
}

describe('live config on running containers (real LXC)', { skip }, () => {
  const rand = randomBytes(3).toString('hex');
  let d: Daemon;
  let api: Client;
  let cli: LxcCli;
  let imgDir = '';
  let work = '';
  let volume = '';

  const waitOp = (res: Reply, want = 'Success') => waitOpOf(api, res, want);
  const state = async (name: string) => (await api.get(`/1.0/containers/${name}/state`)).json.metadata;
  async function launch(name: string, extra: Record<string, unknown> = {}): Promise<number> {
    await waitOp(await api.post('/1.0/containers', { name, source: { type: 'image', alias: 'bb' }, ...extra }));
    await waitOp(await api.put(`/1.0/containers/${name}/state`, { action: 'start' }));
    const st = await state(name);
    assert.equal(st.status, 'Running');
    return st.pid;
  }
  /** PUT the container with `change` applied to its config/devices; waits for the operation. */
  async function edit(
    name: string,
    change: (c: { config: Record<string, string>; devices: Record<string, Record<string, string>> }) => void,
    want = 'Success',
  ) {
    const cur = (await api.get(`/1.0/containers/${name}`)).json.metadata;
    const body = {
      architecture: cur.architecture,
      config: { ...cur.config },
      devices: structuredClone(cur.devices),
      ephemeral: cur.ephemeral,
      profiles: cur.profiles,
      description: cur.description,
    };
    change(body);
    return waitOp(await api.put(`/1.0/containers/${name}`, body), want);
  }
  const limit = (pid: number, controller: string, v1: string, v2: string) => cgroupFile(pid, controller, v1, v2);

  before(async () => {
    await ensureRootSubids();
    imgDir = await mkdtemp(path.join(os.tmpdir(), 'svcd-live-img-'));
    work = await mkdtemp(path.join(os.tmpdir(), 'svcd-live-'));
    await chmod(work, 0o711);
    await mkdir(path.join(work, 'share'), { mode: 0o755 });
    await writeFile(path.join(work, 'share', 'hello'), 'from the host\n');
    d = await startDaemon();
    api = client({ socketPath: d.socketPath });
    cli = await lxcCli(d.stateDir);
    await uploadBusybox(api, imgDir);
    volume = `live${rand}`;
    const r = await api.post('/1.0/storage-pools/default/volumes', { name: volume, type: 'custom', config: {} });
    assert.ok(r.status === 200 || r.status === 202, r.text);
    if (r.status === 202) await waitOp(r);
  });

  after(async () => {
    // Containers first (they attach the volume), then the volume, then the daemon and what it left.
    const list = (await api?.get('/1.0/containers').catch(() => undefined))?.json?.metadata;
    for (const c of Array.isArray(list) ? list : []) {
      await api
        .put(`${c}/state`, { action: 'stop', force: true })
        .then((r) => api.get(`${r.json.operation}/wait?timeout=60`))
        .catch(() => {});
      await api
        .delete(c)
        .then((r) => api.get(`${r.json.operation}/wait?timeout=60`))
        .catch(() => {});
    }
    if (volume) await api?.delete(`/1.0/storage-pools/default/volumes/custom/${volume}`).catch(() => {});
    await cli?.cleanup().catch(() => {});
    await teardownContainers(d, api, [imgDir, work]);
  });

  test('limits are written to the running container when the operation succeeds, and reset when unset', async () => {
    const name = `lim${rand}`;
    const pid = await launch(name);
    assert.ok(
      Number(
        await limit(pid, 'memory', 'memory.limit_in_bytes', 'memory.max').then((v) => (v === 'max' ? UNLIMITED : v)),
      ) >= UNLIMITED,
    );
    await edit(name, (c) => {
      c.config['limits.memory'] = '64MiB';
      c.config['limits.processes'] = '50';
      c.config['limits.cpu'] = '1';
    });
    // No waiting: the operation's success means the host has it.
    assert.equal(await limit(pid, 'memory', 'memory.limit_in_bytes', 'memory.max'), String(64 * 1024 * 1024));
    assert.equal(await limit(pid, 'pids', 'pids.max', 'pids.max'), '50');
    assert.equal(await limit(pid, 'cpuset', 'cpuset.cpus', 'cpuset.cpus'), '0');
    assert.equal((await state(name)).pid, pid, 'no restart');
    assert.deepEqual((await state(name)).pending_restart, []);

    await edit(name, (c) => {
      delete c.config['limits.memory'];
      delete c.config['limits.processes'];
      delete c.config['limits.cpu'];
    });
    const mem = await limit(pid, 'memory', 'memory.limit_in_bytes', 'memory.max');
    assert.ok(mem === 'max' || Number(mem) >= UNLIMITED, `memory limit back to unlimited, is ${mem}`);
    assert.equal(await limit(pid, 'pids', 'pids.max', 'pids.max'), 'max');
    const parentCpus = (await readFile(`/sys/fs/cgroup/cpuset/cpuset.cpus`, 'utf8').catch(() => '')).trim();
    if (parentCpus) assert.equal(await limit(pid, 'cpuset', 'cpuset.cpus', 'cpuset.cpus'), parentCpus);
  });

  test('a limit the kernel refuses fails the operation with the reason', async () => {
    const name = `big${rand}`;
    await launch(name);
    const op = await edit(name, (c) => (c.config['limits.cpu'] = '0-1023'), 'Failure');
    assert.match(op.err, /limits\.cpu/);
  });

  test('PATCH (sync) answers once the running container has the change, or with the reason it cannot', async () => {
    const name = `pat${rand}`;
    const pid = await launch(name);
    const r = await api.patch(`/1.0/containers/${name}`, {
      config: { 'limits.processes': '33' },
      devices: { share: { type: 'disk', source: path.join(work, 'share'), path: '/mnt/share' } },
    });
    assert.equal(r.status, 200, r.text);
    // No waiting: the 200 means the host has it.
    assert.equal(await limit(pid, 'pids', 'pids.max', 'pids.max'), '33');
    assert.equal((await mountsOf(pid)).get('/mnt/share'), false);
    const bad = await api.patch(`/1.0/containers/${name}`, { config: { 'limits.cpu': '0-1023' } });
    assert.match(expectError(bad, 500), /limits\.cpu/);
    assert.equal((await state(name)).pid, pid, 'no restart');
  });

  test("a limit changed behind svcd's back is put back", async () => {
    const name = `drf${rand}`;
    const pid = await launch(name, { config: { 'limits.processes': '40' } });
    assert.equal(await limit(pid, 'pids', 'pids.max', 'pids.max'), '40');
    const file = (await readFile(`/proc/${pid}/cgroup`, 'utf8')).split('\n').find((l) => /:pids:/.test(l));
    assert.ok(file, 'a pids cgroup');
    const dir = path.join('/sys/fs/cgroup/pids', file!.split(':')[2]!.split('/').slice(0, 2).join('/'));
    await writeFile(path.join(dir, 'pids.max'), '99');
    await eventually(
      async () => ((await limit(pid, 'pids', 'pids.max', 'pids.max')) === '40' ? true : undefined),
      'pids.max put back',
      20_000,
    );
  });

  test('disks (host path, read-only, custom volume) are mounted into and unmounted from the running container', async () => {
    const name = `dsk${rand}`;
    const pid = await launch(name);
    await edit(name, (c) => {
      c.devices.share = { type: 'disk', source: path.join(work, 'share'), path: '/mnt/share' };
      c.devices.vol = { type: 'disk', pool: 'default', source: volume, path: '/mnt/vol' };
    });
    let m = await mountsOf(pid);
    assert.equal(m.get('/mnt/share'), false, 'share mounted read-write');
    assert.ok(m.has('/mnt/vol'), 'volume mounted');
    assert.equal(await readFile(`/proc/${pid}/root/mnt/share/hello`, 'utf8'), 'from the host\n');
    // The custom volume is idmapped: the container's root writes to it as root, and reads it back owned by root.
    const w = await waitOp(
      await api.post(`/1.0/containers/${name}/exec`, {
        command: ['sh', '-c', 'echo x > /mnt/vol/probe && stat -c %u /mnt/vol/probe | grep -qx 0'],
        'wait-for-websocket': false,
      }),
    );
    assert.equal(w.metadata.return, 0, 'root inside writes the volume as root');

    await edit(name, (c) => (c.devices.share!.readonly = 'true'));
    m = await mountsOf(pid);
    assert.equal(m.get('/mnt/share'), true, 'share now read-only');

    await edit(name, (c) => {
      delete c.devices.share;
      delete c.devices.vol;
    });
    m = await mountsOf(pid);
    assert.ok(!m.has('/mnt/share') && !m.has('/mnt/vol'), 'both unmounted');
    assert.equal((await state(name)).pid, pid, 'no restart');
  });

  test("a mount removed behind svcd's back comes back", async () => {
    const name = `dmt${rand}`;
    const pid = await launch(name, {
      devices: { share: { type: 'disk', source: path.join(work, 'share'), path: '/mnt/share' } },
    });
    assert.ok((await mountsOf(pid)).has('/mnt/share'));
    const { execFile } = await import('node:child_process');
    await new Promise<void>((resolve, reject) =>
      execFile('nsenter', ['-t', String(pid), '-m', '--', 'umount', '-l', '/mnt/share'], (e) =>
        e ? reject(e) : resolve(),
      ),
    );
    assert.ok(!(await mountsOf(pid)).has('/mnt/share'));
    await eventually(
      async () => ((await mountsOf(pid)).has('/mnt/share') ? true : undefined),
      'mount put back',
      20_000,
    );
  });

  test('unix-char devices appear and disappear live', async () => {
    const name = `unx${rand}`;
    const pid = await launch(name);
    await edit(name, (c) => (c.devices.zero = { type: 'unix-char', source: '/dev/zero', path: '/dev/myzero' }));
    const st = await stat(`/proc/${pid}/root/dev/myzero`);
    assert.ok(st.isCharacterDevice());
    assert.equal(st.rdev, (await stat('/dev/zero')).rdev);
    await edit(name, (c) => delete c.devices.zero);
    await assert.rejects(stat(`/proc/${pid}/root/dev/myzero`), /ENOENT/);
    // /dev/null is still usable: removing a device never takes back what every container has.
    const exec = await api.post(`/1.0/containers/${name}/exec`, {
      command: ['sh', '-c', 'echo x > /dev/null'],
      'wait-for-websocket': false,
    });
    const op = await waitOp(exec);
    assert.equal(op.metadata.return, 0);
  });

  test('a profile change reaches every running container that uses it before the PUT answers; one it cannot apply is refused and put back', async () => {
    const prof = `p${rand}`;
    assert.equal((await api.post('/1.0/profiles', { name: prof, config: { 'limits.processes': '70' } })).status, 200);
    const name = `prf${rand}`;
    const pid = await launch(name, { profiles: ['default', prof] });
    assert.equal(await limit(pid, 'pids', 'pids.max', 'pids.max'), '70');
    const put = await api.put(`/1.0/profiles/${prof}`, {
      config: { 'limits.processes': '60' },
      devices: { share: { type: 'disk', source: path.join(work, 'share'), path: '/mnt/p' } },
    });
    assert.equal(put.status, 200, put.text);
    assert.equal(await limit(pid, 'pids', 'pids.max', 'pids.max'), '60');
    assert.ok((await mountsOf(pid)).has('/mnt/p'));

    const bad = await api.put(`/1.0/profiles/${prof}`, {
      config: { 'limits.processes': '55' },
      devices: { bad: { type: 'disk', source: path.join(work, 'missing'), path: '/mnt/bad' } },
    });
    assert.equal(bad.json.type, 'error', bad.text);
    assert.match(bad.json.error, new RegExp(`container "${name}".*does not exist.*left unchanged`));
    const now = (await api.get(`/1.0/profiles/${prof}`)).json.metadata;
    assert.equal(now.config['limits.processes'], '60');
    assert.ok(!now.devices.bad);
    await eventually(
      async () => ((await limit(pid, 'pids', 'pids.max', 'pids.max')) === '60' ? true : undefined),
      'the old profile applied again',
    );
  });

  test('keys that need a restart are pending until the restart', async () => {
    const name = `pnd${rand}`;
    const pid = await launch(name);
    await edit(name, (c) => {
      c.config['security.syscalls.blacklist'] = 'mount errno 1';
      c.config['limits.kernel.nofile'] = '1000';
      c.config['limits.processes'] = '33';
    });
    const st = await state(name);
    assert.deepEqual(st.pending_restart, ['limits.kernel.nofile', 'security.syscalls.blacklist']);
    assert.equal(await limit(pid, 'pids', 'pids.max', 'pids.max'), '33');
    await waitOp(await api.put(`/1.0/containers/${name}/state`, { action: 'restart', force: true }));
    const after = await state(name);
    assert.notEqual(after.pid, pid);
    assert.deepEqual(after.pending_restart, []);
    assert.match(await readFile(`/proc/${after.pid}/limits`, 'utf8'), /Max open files\s+1000\s+1000/);
  });

  test('with the real lxc CLI: config set and device add/remove take effect without a restart', async () => {
    const name = `cli${rand}`;
    const pid = await launch(name);
    await cli.ok(['config', 'set', name, 'limits.memory', '64MB']);
    assert.equal(
      await limit(pid, 'memory', 'memory.limit_in_bytes', 'memory.max'),
      String(Math.floor(64_000_000 / 4096) * 4096),
    );
    await cli.ok(['config', 'device', 'add', name, 'x', 'disk', `source=${path.join(work, 'share')}`, 'path=/mnt/x']);
    assert.ok((await mountsOf(pid)).has('/mnt/x'));
    assert.equal(await readFile(`/proc/${pid}/root/mnt/x/hello`, 'utf8'), 'from the host\n');
    await cli.ok(['config', 'device', 'remove', name, 'x']);
    assert.ok(!(await mountsOf(pid)).has('/mnt/x'));
    assert.equal((await state(name)).pid, pid);
  });
});
