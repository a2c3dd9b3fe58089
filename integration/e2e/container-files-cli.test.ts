/**
 * The files API through unmodified clients on real LXC (busybox image): Debian's `lxc file
 * push/pull/delete` (5.0.2: single files, `-r` trees with symlinks, `-p` parents, `--uid/--gid/--mode`)
 * on a running unprivileged container, and python3-pylxd 2.2.10 `container.files.put/get/delete`
 * and `recursive_put` on a stopped privileged one. Every effect is also checked over REST and on
 * the host (inside the container with `stat`, or on the stopped rootfs). `after` tears everything
 * down (containers, monitors, mounts, temp dirs), also on failure.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { runInContainer } from '../../src/host/lxc/attach.ts';
import { lxcIdOf, rootfsDirOf, teardownContainers, uploadBusybox, waitOp } from '../support/container-env.ts';
import { startDaemon, type Daemon } from '../support/daemon.ts';
import { client, eventually, expectError, type Client } from '../support/http.ts';
import { lxcCli, type LxcCli } from '../support/lxc-cli.ts';
import { ensureRootSubids, lxcSkipReason } from '../support/lxc-host.ts';

const skip = await lxcSkipReason();
if (skip) console.log(`# skipping container files CLI e2e tests: ${skip}`);

/** One pylxd session per step: `python3 -c SCRIPT <step> <container>` prints a JSON object on its last line. */
const PYLXD = String.raw`
import json, os, sys, tempfile
import pylxd
from pylxd import exceptions

def err(fn):
    try:
        fn()
    except exceptions.LXDAPIException as e:
        return {'status': e.response.status_code, 'message': str(e)}
    return None

c = pylxd.Client()
ct = c.containers.get(sys.argv[2])
step = sys.argv[1]
if step == 'put-get':
    ct.files.put('/root/py.txt', b'from pylxd\n', mode=0o600, uid=1000, gid=1001)
    ct.files.put('/root/py-str.txt', 'text', mode='640')
    out = {'get': ct.files.get('/root/py.txt').decode(), 'get_str': ct.files.get('/root/py-str.txt').decode(),
           'delete_available': ct.files.delete_available(),
           'missing_parent': err(lambda: ct.files.put('/nope/x', b'x'))}
elif step == 'delete':
    ct.files.delete('/root/py.txt')
    out = {'missing': err(lambda: ct.files.delete('/root/py.txt'))}
elif step == 'recursive':
    src = tempfile.mkdtemp()
    os.makedirs(os.path.join(src, 'a', 'b'))
    with open(os.path.join(src, 'a', 'b', 'deep.txt'), 'w') as f:
        f.write('deep')
    with open(os.path.join(src, 'top.txt'), 'w') as f:
        f.write('top')
    ct.files.recursive_put(src, '/root/pytree', mode=0o750, uid=3, gid=4)
    out = {'deep': ct.files.get('/root/pytree/a/b/deep.txt').decode()}
print(json.dumps(out))
`;

function pylxd(stateDir: string, step: string, ct: string): Promise<any> {
  return new Promise((resolve, reject) => {
    execFile(
      '/usr/bin/python3',
      ['-c', PYLXD, step, ct],
      { env: { PATH: '/usr/bin:/bin', LXD_DIR: stateDir, PYTHONDONTWRITEBYTECODE: '1' }, timeout: 60_000 },
      (err, stdout, stderr) => {
        if (err) return reject(new Error(`pylxd step ${step} failed: ${err.message}\n${stderr}`));
        try {
          resolve(JSON.parse(stdout.trim().split('\n').pop() ?? ''));
        } catch {
          reject(new Error(`pylxd step ${step} printed no JSON:\n${stdout}\n${stderr}`));
        }
      },
    );
  });
}

describe('container files through the lxc CLI and pylxd', { skip }, () => {
  let d: Daemon;
  let api: Client;
  let lxc: LxcCli;
  let work: string;
  let runId = '';
  let stoppedRootfs = '';

  const url = (name: string, p: string) => `/1.0/containers/${name}/files?path=${encodeURIComponent(p)}`;
  const inside = async (p: string) =>
    (
      await runInContainer({
        name: runId,
        lxcPath: path.join(d.stateDir, 'containers'),
        command: ['/bin/busybox', 'stat', '-c', '%u %g %a %F', p],
      })
    ).trim();
  const onDisk = (p: string) => {
    const st = fs.lstatSync(path.join(stoppedRootfs, p));
    return `${st.uid} ${st.gid} ${(st.mode & 0o7777).toString(8)}`;
  };

  before(async () => {
    await ensureRootSubids();
    work = await mkdtemp(path.join(os.tmpdir(), 'svcd-files-cli-'));
    d = await startDaemon({ env: { SVCD_LOG_LEVEL: 'info' } });
    api = client({ socketPath: d.socketPath });
    lxc = await lxcCli(d.stateDir);
    await uploadBusybox(api, work);
    await waitOp(api, await api.post('/1.0/containers', { name: 'run', source: { type: 'image', alias: 'bb' } }));
    await waitOp(api, await api.put('/1.0/containers/run/state', { action: 'start' }));
    await eventually(
      async () => (await api.get('/1.0/containers/run/state')).json.metadata.pid > 0,
      'run running',
      30_000,
    );
    runId = await lxcIdOf(d.stateDir, 'run');
    await waitOp(
      api,
      await api.post('/1.0/containers', {
        name: 'stopped',
        source: { type: 'image', alias: 'bb' },
        config: { 'security.privileged': 'true' },
      }),
    );
    stoppedRootfs = await rootfsDirOf(d.stateDir, await lxcIdOf(d.stateDir, 'stopped'));
  });

  after(async () => {
    await lxc?.cleanup();
    await teardownContainers(d, api, [work]);
  });

  test('lxc file push / pull of one file, with --uid/--gid/--mode and from the source file', async () => {
    const src = path.join(work, 'one.txt');
    fs.writeFileSync(src, 'pushed by lxc\n');
    fs.chmodSync(src, 0o600);
    await lxc.ok(['file', 'push', '--uid', '1000', '--gid', '1001', '--mode', '0640', src, 'run/root/one.txt']);
    assert.equal(await inside('/root/one.txt'), '1000 1001 640 regular file');
    const r = await api.get(url('run', '/root/one.txt'));
    assert.deepEqual([r.text, r.headers['x-lxd-uid'], r.headers['x-lxd-mode']], ['pushed by lxc\n', '1000', '0640']);

    // Without flags the CLI sends the source file's mode (and root's ids).
    await lxc.ok(['file', 'push', src, 'run/root/two.txt']);
    assert.equal(await inside('/root/two.txt'), '0 0 600 regular file');

    const dst = path.join(work, 'pulled.txt');
    await lxc.ok(['file', 'pull', 'run/root/one.txt', dst]);
    assert.equal(fs.readFileSync(dst, 'utf8'), 'pushed by lxc\n');
    assert.equal(fs.statSync(dst).mode & 0o777, 0o640, 'lxc file pull applies the X-LXD-mode it got');
    assert.match(await lxc.fail(['file', 'pull', 'run/root/missing', dst]), /not found/i);
    assert.match(await lxc.fail(['file', 'push', src, 'run/nope/x.txt']), /"nope" does not exist/);

    // -p creates the missing parents (the CLI GETs each and POSTs directories).
    await lxc.ok(['file', 'push', '-p', src, 'run/root/p1/p2/deep.txt']);
    assert.equal((await api.get(url('run', '/root/p1/p2/deep.txt'))).text, 'pushed by lxc\n');
    assert.match(await inside('/root/p1/p2'), / directory$/);
  });

  test('lxc file push -r / pull -r of a tree with a symlink', async () => {
    const tree = path.join(work, 'tree');
    fs.mkdirSync(path.join(tree, 'sub'), { recursive: true });
    fs.writeFileSync(path.join(tree, 'a.txt'), 'A');
    fs.writeFileSync(path.join(tree, 'sub/b.txt'), 'B');
    fs.symlinkSync('a.txt', path.join(tree, 'link'));
    await lxc.ok(['file', 'push', '-r', tree, 'run/root/']);
    assert.deepEqual((await api.get(url('run', '/root/tree'))).json.metadata, ['a.txt', 'link', 'sub']);
    const link = await api.get(url('run', '/root/tree/link'));
    assert.deepEqual([link.text, link.headers['x-lxd-type']], ['a.txt', 'symlink']);
    assert.match(await inside('/root/tree/link'), /symbolic link$/);
    assert.equal((await api.get(url('run', '/root/tree/sub/b.txt'))).text, 'B');

    const back = path.join(work, 'back');
    fs.mkdirSync(back);
    await lxc.ok(['file', 'pull', '-r', 'run/root/tree', back]);
    assert.equal(fs.readFileSync(path.join(back, 'tree/a.txt'), 'utf8'), 'A');
    assert.equal(fs.readFileSync(path.join(back, 'tree/sub/b.txt'), 'utf8'), 'B');
    assert.equal(fs.readlinkSync(path.join(back, 'tree/link')), 'a.txt');
  });

  test('lxc file delete: files and empty directories; a non-empty directory is refused', async () => {
    assert.match(await lxc.fail(['file', 'delete', 'run/root/tree/sub']), /not empty/);
    await lxc.ok(['file', 'delete', 'run/root/tree/sub/b.txt']);
    await lxc.ok(['file', 'delete', 'run/root/tree/sub']);
    await lxc.ok(['file', 'delete', 'run/root/tree/link']);
    expectError(await api.get(url('run', '/root/tree/sub')), 404);
    assert.deepEqual((await api.get(url('run', '/root/tree'))).json.metadata, ['a.txt']);
    assert.match(await lxc.fail(['file', 'delete', 'run/root/tree/sub']), /not found/i);
  });

  test('pylxd files.put / get / delete / recursive_put on a stopped privileged container', async () => {
    const out = await pylxd(d.stateDir, 'put-get', 'stopped');
    assert.equal(out.get, 'from pylxd\n');
    assert.equal(out.get_str, 'text');
    assert.equal(out.delete_available, true);
    assert.equal(out.missing_parent.status, 404);
    assert.equal(onDisk('root/py.txt'), '1000 1001 600');
    assert.equal(onDisk('root/py-str.txt'), '0 0 640');
    const del = await pylxd(d.stateDir, 'delete', 'stopped');
    assert.equal(del.missing.status, 404);
    assert.equal(fs.existsSync(path.join(stoppedRootfs, 'root/py.txt')), false);
    const rec = await pylxd(d.stateDir, 'recursive', 'stopped');
    assert.equal(rec.deep, 'deep');
    assert.equal(onDisk('root/pytree/a/b'), '3 4 750');
    assert.equal(onDisk('root/pytree/a/b/deep.txt'), '3 4 750');
    assert.equal(fs.readFileSync(path.join(stoppedRootfs, 'root/pytree/top.txt'), 'utf8'), 'top');
  });
});
