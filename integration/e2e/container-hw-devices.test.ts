/**
 * gpu, usb and infiniband on a host without such hardware (real LXC): the start fails naming what the
 * host lacks (a usb device only when required=true: usb hotplug is container-usb-hotplug.test.ts), a
 * device added live to a running container fails its operation (the container keeps running without it),
 * and what svcd can never do is a 400 at the write. Profiles carry devices: a disk and a unix-char device
 * added to a profile reach a running container using it before the PUT answers, and go when removed.
 */
import assert from 'node:assert/strict';
import { chmod, mkdir, mkdtemp, readFile, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startBusyboxDaemon, teardownContainers, waitOp as waitOpOf } from '../support/container-env.ts';
import type { Daemon } from '../support/daemon.ts';
import { expectError, type Client } from '../support/http.ts';
import { lxcSkipReason } from '../support/lxc-host.ts';

const skip = await lxcSkipReason();
if (skip) console.log(`# skipping hardware device e2e tests: ${skip}`);

const hasMount = async (pid: number, target: string) =>
  (await readFile(`/proc/${pid}/mountinfo`, 'utf8')).split('\n').some((l) => l.split(' ')[4] === target);

describe('gpu/usb/infiniband refusals and profile devices (real LXC)', { skip }, () => {
  let d: Daemon;
  let api: Client;
  let imgDir = '';
  let work = '';
  const waitOp = (res: { status: number; json: any; text: string }, want = 'Success') => waitOpOf(api, res, want);

  before(async () => {
    ({ d, api, imgDir } = await startBusyboxDaemon());
    work = await mkdtemp(path.join(os.tmpdir(), 't17hw-'));
    await chmod(work, 0o711);
    await mkdir(path.join(work, 'share'), { mode: 0o755 });
  });
  after(async () => {
    await teardownContainers(d, api, [imgDir, work]);
  });

  test('a gpu, usb or infiniband device that matches nothing fails the start, naming what is missing', async () => {
    for (const [name, dev, re] of [
      [
        't17gpu',
        { type: 'gpu', vendorid: '10de' },
        /gpu "hw": no GPU matches vendorid=10de: the host has (no GPU|card)/,
      ],
      [
        't17usb',
        { type: 'usb', vendorid: '046d', productid: 'c52b', required: 'true' },
        /usb "hw": required, but no USB device matches vendorid=046d, productid=c52b/,
      ],
      [
        't17ib',
        { type: 'infiniband', nictype: 'physical', parent: 'ib0' },
        /infiniband "hw": (the host has no InfiniBand device|host interface "ib0")/,
      ],
    ] as const) {
      await waitOp(
        await api.post('/1.0/containers', { name, source: { type: 'image', alias: 'bb' }, devices: { hw: dev } }),
      );
      const op = await waitOp(await api.put(`/1.0/containers/${name}/state`, { action: 'start' }), 'Failure');
      assert.match(op.err, re);
      assert.equal((await api.get(`/1.0/containers/${name}/state`)).json.metadata.status, 'Stopped');
    }
  });

  test('a gpu added to a running container fails the operation; the container keeps running', async () => {
    await waitOp(await api.post('/1.0/containers', { name: 't17liv', source: { type: 'image', alias: 'bb' } }));
    await waitOp(await api.put('/1.0/containers/t17liv/state', { action: 'start' }));
    const pid = (await api.get('/1.0/containers/t17liv/state')).json.metadata.pid;
    const cur = (await api.get('/1.0/containers/t17liv')).json.metadata;
    const body = {
      architecture: cur.architecture,
      config: cur.config,
      devices: { ...cur.devices, g: { type: 'gpu', pci: '0000:09:00.0' } },
      ephemeral: cur.ephemeral,
      profiles: cur.profiles,
      description: cur.description,
    };
    const op = await waitOp(await api.put('/1.0/containers/t17liv', body), 'Failure');
    assert.match(op.err, /gpu "g": no GPU matches pci=0000:09:00.0/);
    const st = (await api.get('/1.0/containers/t17liv/state')).json.metadata;
    assert.equal(st.status, 'Running');
    assert.equal(st.pid, pid);
  });

  test('what svcd can never do is refused at the write', async () => {
    const create = (devices: unknown, config: Record<string, string> = {}) =>
      api.post('/1.0/containers', { name: 't17bad', source: { type: 'image', alias: 'bb' }, devices, config });
    assert.match(
      expectError(await create({ g: { type: 'gpu', gputype: 'mig' } }), 400),
      /Device "g" \(gpu\): invalid "gputype"/,
    );
    assert.match(
      expectError(await create({ u: { type: 'usb', vendorid: 'x46d' } }), 400),
      /Device "u" \(usb\): invalid "vendorid"/,
    );
    assert.match(
      expectError(await create({ i: { type: 'infiniband', parent: 'ib0' } }), 400),
      /Device "i" \(infiniband\): "nictype"/,
    );
    assert.match(
      expectError(await create({}, { 'nvidia.runtime': 'true' }), 400),
      /"nvidia.runtime".*nvidia-container-cli/,
    );
  });

  test('profile devices reach running containers live: added and removed before the PUT answers', async () => {
    assert.equal((await api.post('/1.0/profiles', { name: 't17prof', config: {}, devices: {} })).status, 200);
    await waitOp(
      await api.post('/1.0/containers', {
        name: 't17prf',
        source: { type: 'image', alias: 'bb' },
        profiles: ['default', 't17prof'],
      }),
    );
    await waitOp(await api.put('/1.0/containers/t17prf/state', { action: 'start' }));
    const pid = (await api.get('/1.0/containers/t17prf/state')).json.metadata.pid;
    const devices = {
      share: { type: 'disk', source: path.join(work, 'share'), path: '/mnt/t17' },
      z: { type: 'unix-char', source: '/dev/zero', path: '/dev/t17z' },
    };
    const put = await api.put('/1.0/profiles/t17prof', { config: {}, devices });
    assert.equal(put.status, 200, put.text);
    assert.ok(await hasMount(pid, '/mnt/t17'), 'disk mounted when the PUT answers');
    assert.ok((await stat(`/proc/${pid}/root/dev/t17z`)).isCharacterDevice(), 'unix-char node there');
    const patch = await api.put('/1.0/profiles/t17prof', { config: {}, devices: { z: devices.z } });
    assert.equal(patch.status, 200, patch.text);
    assert.ok(!(await hasMount(pid, '/mnt/t17')), 'disk unmounted when the PUT answers');
    assert.ok((await stat(`/proc/${pid}/root/dev/t17z`)).isCharacterDevice());
    const p2 = await api.put('/1.0/profiles/t17prof', { config: {}, devices: {} });
    assert.equal(p2.status, 200, p2.text);
    await assert.rejects(stat(`/proc/${pid}/root/dev/t17z`), /ENOENT/, 'gone with the profile device');
    assert.equal((await api.get('/1.0/containers/t17prf/state')).json.metadata.pid, pid, 'no restart');
  });
});
