/**
 * usb hotplug on real LXC (usb_devices), on a fake sysfs and fake device nodes (the daemon is pointed at
 * them with SVCD_SYSFS_ROOT and SVCD_DEV_ROOT): a usb device with required=false (LXD's default) that is
 * not plugged leaves the container starting without it; "plugging" it (its sysfs entry, then a `mknod` of
 * 189:N at /dev/bus/usb/BBB/DDD, on a bus whose directory did not exist) puts the node in the running
 * container at the same path with the same numbers, and allows it in the device cgroup, with no API call;
 * "unplugging" takes both away again. A required usb device that is absent fails the start naming it; a
 * bad vendorid is a 400 naming the key.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { splitDevT } from '../../src/host/devices/read-device-node.ts';
import { cgroupFile } from '../support/cgroup.ts';
import { startBusyboxDaemon, teardownContainers, waitOp as waitOpOf } from '../support/container-env.ts';
import type { Daemon } from '../support/daemon.ts';
import { eventually, expectError, type Client } from '../support/http.ts';
import { lxcSkipReason } from '../support/lxc-host.ts';

const run = promisify(execFile);
const skip = await lxcSkipReason();
if (skip) console.log(`# skipping usb hotplug e2e tests: ${skip}`);

/** A USB device as the kernel shows it: /sys/bus/usb/devices/<name> and its node /dev/bus/usb/BBB/DDD (189:minor). */
interface FakeUsb {
  name: string;
  vendor: string;
  product: string;
  bus: number;
  dev: number;
}
const minorOf = (u: FakeUsb) => (u.bus - 1) * 128 + (u.dev - 1);
const nodeRel = (u: FakeUsb) => path.join('bus', 'usb', String(u.bus).padStart(3, '0'), String(u.dev).padStart(3, '0'));

describe('usb hotplug (real LXC, fake sysfs and /dev)', { skip }, () => {
  let d: Daemon;
  let api: Client;
  let imgDir = '';
  let fake = '';
  const sys = () => path.join(fake, 'sys');
  const dev = () => path.join(fake, 'dev');
  const waitOp = (res: { status: number; json: any; text: string }, want = 'Success') => waitOpOf(api, res, want);

  /** As the kernel does: the sysfs entry first, then devtmpfs's node. */
  async function plug(u: FakeUsb) {
    const dir = path.join(sys(), 'bus', 'usb', 'devices', u.name);
    await mkdir(dir, { recursive: true });
    for (const [f, v] of [
      ['idVendor', u.vendor],
      ['idProduct', u.product],
      ['busnum', String(u.bus)],
      ['devnum', String(u.dev)],
      ['dev', `189:${minorOf(u)}`],
    ])
      await writeFile(path.join(dir, f!), `${v}\n`);
    const node = path.join(dev(), nodeRel(u));
    await mkdir(path.dirname(node), { recursive: true });
    await run('mknod', ['-m', '0664', node, 'c', '189', String(minorOf(u))]);
  }
  /** As the kernel does: the node goes, then the sysfs entry. */
  async function unplug(u: FakeUsb) {
    await rm(path.join(dev(), nodeRel(u)));
    await rm(path.join(sys(), 'bus', 'usb', 'devices', u.name), { recursive: true });
  }
  const devicesList = async (pid: number) =>
    (await cgroupFile(pid, 'devices', 'devices.list', 'cgroup.controllers')).split('\n');

  before(async () => {
    fake = await mkdtemp(path.join(os.tmpdir(), 'usb-fake-'));
    await mkdir(path.join(sys(), 'bus', 'usb', 'devices'), { recursive: true });
    await mkdir(path.join(dev(), 'bus', 'usb'), { recursive: true });
    ({ d, api, imgDir } = await startBusyboxDaemon({ SVCD_SYSFS_ROOT: sys(), SVCD_DEV_ROOT: dev() }));
  });
  after(async () => {
    await teardownContainers(d, api, [imgDir, fake]);
  });

  test('a required=false usb device follows plugging into and out of the running container', async () => {
    // Another device is plugged already: it does not match and stays out.
    const other: FakeUsb = { name: '1-2', vendor: '046d', product: 'c52b', bus: 1, dev: 4 };
    const stick: FakeUsb = { name: '3-1', vendor: '0781', product: '5581', bus: 3, dev: 5 };
    await plug(other);
    // Privileged: an unprivileged container's device cgroup allows everything (LXC's userns.conf clears
    // common.conf's `deny a`), so only a privileged one shows the allow coming and going.
    await waitOp(
      await api.post('/1.0/containers', {
        name: 'usbhp',
        source: { type: 'image', alias: 'bb' },
        config: { 'security.privileged': 'true' },
        devices: { stick: { type: 'usb', vendorid: '0781', productid: '5581', required: 'false', mode: '0666' } },
      }),
    );
    await waitOp(await api.put('/1.0/containers/usbhp/state', { action: 'start' }));
    const pid: number = (await api.get('/1.0/containers/usbhp/state')).json.metadata.pid;
    const inside = `/proc/${pid}/root/dev/${nodeRel(stick)}`;
    const rule = `c 189:${minorOf(stick)} rwm`;
    await assert.rejects(stat(inside), /ENOENT/, 'not plugged: the container starts without it');
    await assert.rejects(
      stat(`/proc/${pid}/root/dev/${nodeRel(other)}`),
      /ENOENT/,
      'a device that does not match stays out',
    );
    assert.ok(
      (await devicesList(pid)).includes('c 1:3 rwm') && !(await devicesList(pid)).includes('a *:* rwm'),
      "a device allow list (common.conf's)",
    );
    assert.ok(!(await devicesList(pid)).includes(rule));

    // Plugged on bus 003, whose directory does not exist yet: the watch follows it down.
    await plug(stick);
    const t0 = Date.now();
    const st = await eventually(async () => stat(inside).catch(() => undefined), 'usb node in the container', 5_000);
    assert.ok(Date.now() - t0 < 2_500, `appeared after ${Date.now() - t0} ms`);
    assert.ok(st.isCharacterDevice());
    assert.deepEqual(splitDevT(BigInt(st.rdev)), { major: 189, minor: minorOf(stick) });
    assert.equal(st.mode & 0o777, 0o666, "the device's mode");
    let list: string[] = [];
    await eventually(
      async () => ((list = await devicesList(pid)).includes(rule) ? true : undefined),
      `${rule} in devices.list`,
      5_000,
    ).catch((e: Error) => {
      throw new Error(`${e.message}; it has: ${list.join(', ')}`);
    });
    const ls = await waitOp(
      await api.post('/1.0/containers/usbhp/exec', {
        command: ['sh', '-c', `test -c /dev/${nodeRel(stick)}`],
        'wait-for-websocket': false,
      }),
    );
    assert.equal(ls.metadata.return, 0, 'a char device inside, seen from the container');

    await unplug(stick);
    await eventually(
      async () => ((await stat(inside).catch(() => undefined)) ? undefined : true),
      'usb node gone from the container',
      5_000,
    );
    await eventually(
      async () => ((await devicesList(pid)).includes(rule) ? undefined : true),
      `${rule} revoked`,
      5_000,
    );
    assert.equal((await api.get('/1.0/containers/usbhp/state')).json.metadata.pid, pid, 'no restart');
    assert.equal((await api.get('/1.0/containers/usbhp/state')).json.metadata.status, 'Running');

    // And back again, on another device number (as a replug gets).
    const again = { ...stick, dev: 6 };
    await plug(again);
    await eventually(
      async () => stat(`/proc/${pid}/root/dev/${nodeRel(again)}`).catch(() => undefined),
      'replugged node in the container',
      5_000,
    );
    await unplug(again);
  });

  test('a required usb device that is absent fails the start, naming it', async () => {
    await waitOp(
      await api.post('/1.0/containers', {
        name: 'usbrq',
        source: { type: 'image', alias: 'bb' },
        devices: { rq: { type: 'usb', vendorid: '1d6b', productid: '0002', required: 'true' } },
      }),
    );
    const op = await waitOp(await api.put('/1.0/containers/usbrq/state', { action: 'start' }), 'Failure');
    assert.match(
      op.err,
      /usb "rq": required, but no USB device matches vendorid=1d6b, productid=0002: the host has 046d:c52b/,
    );
    assert.equal((await api.get('/1.0/containers/usbrq/state')).json.metadata.status, 'Stopped');
  });

  test('a bad vendorid is a 400 naming the key, and nothing is written', async () => {
    const res = await api.post('/1.0/containers', {
      name: 'usbbad',
      source: { type: 'image', alias: 'bb' },
      devices: { u: { type: 'usb', vendorid: '781', required: 'false' } },
    });
    assert.match(expectError(res, 400), /Device "u" \(usb\): invalid "vendorid": must be 4 hexadecimal digits/);
    assert.equal((await api.get('/1.0/containers/usbbad')).status, 404);
  });
});
