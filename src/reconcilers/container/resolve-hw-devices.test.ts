import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { readDrmCards } from '../../host/devices/read-drm-cards.ts';
import { readUsbDevices } from '../../host/devices/read-usb-devices.ts';
import type { SysfsRoots } from '../../host/devices/sysfs-roots.ts';
import { createHostDevicesAdapter } from '../../host/devices/host-devices-adapter.ts';
import { TerminalError } from '../runtime/index.ts';
import { resolveHwDevices } from './resolve-hw-devices.ts';

const execFileP = promisify(execFile);
let tmp = '';
let roots: SysfsRoots;
let empty: SysfsRoots;

async function put(file: string, text: string) {
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, `${text}\n`);
}

/** A fake sysfs as the kernel lays it out: class/drm/cardN with a `device` link to the PCI device, usb devices with their attributes. */
async function fakeSysfs(sys: string) {
  const gpus = [
    { card: 0, render: 128, pci: '0000:00:02.0', vendor: '0x8086', device: '0x3e92' },
    { card: 1, render: 129, pci: '0000:01:00.0', vendor: '0x10de', device: '0x1eb8' },
  ];
  for (const g of gpus) {
    const dev = path.join(sys, 'devices', 'pci0000:00', g.pci);
    await put(path.join(dev, 'vendor'), g.vendor);
    await put(path.join(dev, 'device'), g.device);
    await put(path.join(dev, 'drm', `card${g.card}`, 'dev'), `226:${g.card}`);
    await put(path.join(dev, 'drm', `renderD${g.render}`, 'dev'), `226:${g.render}`);
    await mkdir(path.join(sys, 'class', 'drm'), { recursive: true });
    await symlink(path.join(dev, 'drm', `card${g.card}`), path.join(sys, 'class', 'drm', `card${g.card}`));
    await symlink(dev, path.join(dev, 'drm', `card${g.card}`, 'device'));
  }
  await mkdir(path.join(sys, 'class', 'drm', 'version'), { recursive: true }); // not a card
  const usb = path.join(sys, 'bus', 'usb', 'devices');
  for (const [name, vendor, product, bus, num, minor] of [
    ['1-1', '046d', 'c52b', '1', '3', '2'],
    ['2-4', '0781', '5581', '2', '12', '139'],
  ] as const) {
    await put(path.join(usb, name, 'idVendor'), vendor);
    await put(path.join(usb, name, 'idProduct'), product);
    await put(path.join(usb, name, 'busnum'), bus);
    await put(path.join(usb, name, 'devnum'), num);
    await put(path.join(usb, name, 'dev'), `189:${minor}`);
  }
  await mkdir(path.join(usb, '1-1:1.0'), { recursive: true }); // an interface, no device
}

before(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 't17hw-'));
  roots = { sysRoot: path.join(tmp, 'sys'), devRoot: path.join(tmp, 'dev') };
  empty = { sysRoot: path.join(tmp, 'nosys'), devRoot: path.join(tmp, 'dev') };
  await fakeSysfs(roots.sysRoot);
});
after(async () => {
  await rm(tmp, { recursive: true, force: true });
});

test('DRM cards and USB devices read from sysfs', async () => {
  const cards = await readDrmCards(roots);
  assert.deepEqual(
    cards.map((c) => [
      c.id,
      c.pci,
      c.vendorid,
      c.productid,
      c.nodes.map((n) => [path.relative(roots.devRoot, n.path), n.major, n.minor]),
    ]),
    [
      [
        0,
        '0000:00:02.0',
        '8086',
        '3e92',
        [
          ['dri/card0', 226, 0],
          ['dri/renderD128', 226, 128],
        ],
      ],
      [
        1,
        '0000:01:00.0',
        '10de',
        '1eb8',
        [
          ['dri/card1', 226, 1],
          ['dri/renderD129', 226, 129],
        ],
      ],
    ],
  );
  const usb = await readUsbDevices(roots);
  assert.deepEqual(
    usb.map((u) => [u.name, u.vendorid, u.productid, path.relative(roots.devRoot, u.node.path), u.node.minor]),
    [
      ['1-1', '046d', 'c52b', 'bus/usb/001/003', 2],
      ['2-4', '0781', '5581', 'bus/usb/002/012', 139],
    ],
  );
  assert.deepEqual(await readDrmCards(empty), []);
  assert.deepEqual(await readUsbDevices(empty), []);
});

test('gpu matching by vendorid, productid, id and pci; nodes passed through as unix-char at the same path', async () => {
  const targets = async (dev: Record<string, string>) =>
    (
      await resolveHwDevices({
        devices: { g: { type: 'gpu', ...dev } },
        host: createHostDevicesAdapter(roots),
        mustExist: true,
      })
    ).requests.map((r) => r.target);
  assert.deepEqual(
    await targets({}),
    ['/dev/dri/card0', '/dev/dri/renderD128', '/dev/dri/card1', '/dev/dri/renderD129'],
    'no filter: every GPU',
  );
  assert.deepEqual(await targets({ vendorid: '10DE' }), ['/dev/dri/card1', '/dev/dri/renderD129']);
  assert.deepEqual(await targets({ productid: '3e92' }), ['/dev/dri/card0', '/dev/dri/renderD128']);
  assert.deepEqual(await targets({ id: '1' }), ['/dev/dri/card1', '/dev/dri/renderD129']);
  assert.deepEqual(await targets({ pci: '00:02.0' }), ['/dev/dri/card0', '/dev/dri/renderD128']);
  const [r] = (
    await resolveHwDevices({
      devices: { g: { type: 'gpu', id: '0', uid: '1000', gid: '44', mode: '0666' } },
      host: createHostDevicesAdapter(roots),
      mustExist: true,
    })
  ).requests;
  assert.deepEqual(r, {
    device: 'g.dri-card0',
    type: 'char',
    source: path.join(roots.devRoot, 'dri/card0'),
    target: '/dev/dri/card0',
    major: 226,
    minor: 0,
    uid: 1000,
    gid: 44,
    mode: 0o666,
    required: true,
  });
});

test('usb matching by vendorid and productid', async () => {
  const got = await resolveHwDevices({
    devices: { u: { type: 'usb', vendorid: '0781', required: 'true' }, nic: { type: 'nic', network: 'x' } },
    host: createHostDevicesAdapter(roots),
    mustExist: true,
  });
  assert.deepEqual(
    got.requests.map((r) => [r.device, r.target, r.major, r.minor]),
    [['u.bus-usb-002-012', '/dev/bus/usb/002/012', 189, 139]],
  );
  assert.deepEqual(got.watch, [], 'a required usb device is not watched');
});

test('usb hotplug (required=false, the default): passed through only while its node is there too; the USB node directories are watched', async () => {
  const devices = {
    u: { type: 'usb', vendorid: '046d', productid: 'c52b' },
    n: { type: 'usb', vendorid: '9999', required: 'false' },
  };
  const node = path.join(roots.devRoot, 'bus', 'usb', '001', '003');
  await mkdir(path.dirname(node), { recursive: true });
  let got = await resolveHwDevices({ devices, host: createHostDevicesAdapter(roots), mustExist: true });
  assert.deepEqual(got.requests, [], 'in sysfs, but no node yet: not plugged, and no error');
  assert.deepEqual(got.watch, [`${path.join(roots.devRoot, 'bus', 'usb')}/`, `${path.dirname(node)}/`]);
  await writeFile(node, ''); // not a char device
  assert.deepEqual(
    (await resolveHwDevices({ devices, host: createHostDevicesAdapter(roots), mustExist: true })).requests,
    [],
  );
  await rm(node);
  await execFileP('mknod', ['-m', '0600', node, 'c', '189', '7']); // other numbers than sysfs says
  assert.deepEqual(
    (await resolveHwDevices({ devices, host: createHostDevicesAdapter(roots), mustExist: true })).requests,
    [],
  );
  await rm(node);
  await execFileP('mknod', ['-m', '0600', node, 'c', '189', '2']);
  got = await resolveHwDevices({ devices, host: createHostDevicesAdapter(roots), mustExist: true });
  assert.deepEqual(
    got.requests.map((r) => [r.device, r.source, r.target, r.major, r.minor]),
    [['u.bus-usb-001-003', node, '/dev/bus/usb/001/003', 189, 2]],
  );
  await rm(node);
});

test('what matches nothing fails naming what is missing; a container to stay stopped leaves it out', async () => {
  const fails = (devices: Record<string, Record<string, string>>, r: SysfsRoots, re: RegExp) =>
    assert.rejects(
      resolveHwDevices({ devices, host: createHostDevicesAdapter(r), mustExist: true }),
      (e: unknown) => e instanceof TerminalError && re.test(e.message),
    );
  await fails(
    { g: { type: 'gpu', vendorid: '1002' } },
    roots,
    /gpu "g": no GPU matches vendorid=1002: the host has card0 \(8086:3e92 at 0000:00:02.0\), card1/,
  );
  await fails(
    { g: { type: 'gpu' } },
    empty,
    /gpu "g": no GPU matches any: the host has no GPU \(no DRM card in .*class\/drm\)/,
  );
  await fails(
    { u: { type: 'usb', vendorid: '1234', productid: '5678', required: 'true' } },
    roots,
    /usb "u": required, but no USB device matches vendorid=1234, productid=5678: the host has 046d:c52b, 0781:5581/,
  );
  await fails(
    { u: { type: 'usb', required: 'yes' } },
    empty,
    /usb "u": required, but no USB device matches any: the host has no USB device/,
  );
  await fails(
    { ib: { type: 'infiniband', nictype: 'physical', parent: 'ib0' } },
    empty,
    /infiniband "ib": the host has no InfiniBand device \(.*class\/infiniband is missing or empty\)/,
  );
  assert.deepEqual(
    await resolveHwDevices({
      devices: { g: { type: 'gpu', vendorid: '1002' }, ib: { type: 'infiniband', nictype: 'physical', parent: 'ib0' } },
      host: createHostDevicesAdapter(empty),
      mustExist: false,
    }),
    { requests: [], infiniband: {}, watch: [] },
  );
});

/** A fake sysfs with one two-port HCA (mlx5_0) whose port 2 is IPoIB interface ib1, as the kernel lays it out. */
async function fakeInfiniband(sys: string) {
  const hca = path.join(sys, 'devices', 'pci0000:00', '0000:03:00.0');
  await mkdir(path.join(hca, 'infiniband', 'mlx5_0'), { recursive: true });
  await mkdir(path.join(sys, 'class', 'infiniband'), { recursive: true });
  await symlink(path.join(hca, 'infiniband', 'mlx5_0'), path.join(sys, 'class', 'infiniband', 'mlx5_0'));
  for (const [ifname, devPort] of [
    ['ib0', '0'],
    ['ib1', '1'],
  ] as const) {
    await put(path.join(sys, 'class', 'net', ifname, 'dev_port'), devPort);
    await mkdir(path.join(sys, 'class', 'net', ifname), { recursive: true });
    await symlink(hca, path.join(sys, 'class', 'net', ifname, 'device'));
  }
  await put(path.join(sys, 'class', 'net', 'eth0', 'dev_port'), '0');
  await put(path.join(sys, 'class', 'infiniband_verbs', 'uverbs0', 'ibdev'), 'mlx5_0');
  await put(path.join(sys, 'class', 'infiniband_verbs', 'uverbs0', 'dev'), '231:192');
  await put(path.join(sys, 'class', 'infiniband_verbs', 'uverbs1', 'ibdev'), 'mlx5_1');
  await put(path.join(sys, 'class', 'infiniband_verbs', 'uverbs1', 'dev'), '231:193');
  await put(path.join(sys, 'class', 'infiniband_verbs', 'abi_version'), '6');
  for (const [name, port, minor] of [
    ['umad0', '1', 0],
    ['umad1', '2', 1],
    ['issm0', '1', 64],
    ['issm1', '2', 65],
  ] as const) {
    await put(path.join(sys, 'class', 'infiniband_mad', name, 'ibdev'), 'mlx5_0');
    await put(path.join(sys, 'class', 'infiniband_mad', name, 'port'), port);
    await put(path.join(sys, 'class', 'infiniband_mad', name, 'dev'), `231:${minor}`);
  }
}

test("infiniband nictype=physical: the interface's port found in sysfs, its device's verbs node and its port's umad and issm passed through", async () => {
  const ibRoots = { sysRoot: path.join(tmp, 'ibsys'), devRoot: path.join(tmp, 'dev') };
  await fakeInfiniband(ibRoots.sysRoot);
  const got = await resolveHwDevices({
    devices: { ib: { type: 'infiniband', nictype: 'physical', parent: 'ib1', name: 'ib0' } },
    host: createHostDevicesAdapter(ibRoots),
    mustExist: true,
  });
  assert.deepEqual(got.infiniband, { ib: { ibdev: 'mlx5_0', port: 2, parent: 'ib1' } });
  assert.deepEqual(
    got.requests.map((r) => [r.device, r.target, r.major, r.minor, r.mode.toString(8)]),
    [
      ['ib.infiniband-uverbs0', '/dev/infiniband/uverbs0', 231, 192, '666'],
      ['ib.infiniband-issm1', '/dev/infiniband/issm1', 231, 65, '600'],
      ['ib.infiniband-umad1', '/dev/infiniband/umad1', 231, 1, '600'],
    ],
  );
  // The interface moved into the running container: the host no longer shows it; the recorded port says it.
  const known = { ib: { ibdev: 'mlx5_0', port: 1, parent: 'ib9' } };
  const inside = await resolveHwDevices({
    devices: { ib: { type: 'infiniband', nictype: 'physical', parent: 'ib9' } },
    host: createHostDevicesAdapter(ibRoots),
    mustExist: true,
    known,
  });
  assert.deepEqual(
    inside.requests.map((r) => r.target),
    ['/dev/infiniband/uverbs0', '/dev/infiniband/issm0', '/dev/infiniband/umad0'],
  );
  assert.deepEqual(inside.infiniband, known);
  // A record of another interface does not stand for this one.
  await assert.rejects(
    resolveHwDevices({
      devices: { ib: { type: 'infiniband', nictype: 'physical', parent: 'ib8' } },
      host: createHostDevicesAdapter(ibRoots),
      mustExist: true,
      known,
    }),
    /host interface "ib8" is not an InfiniBand interface/,
  );
  const fails = (dev: Record<string, string>, re: RegExp) =>
    assert.rejects(
      resolveHwDevices({
        devices: { ib: { type: 'infiniband', ...dev } },
        host: createHostDevicesAdapter(ibRoots),
        mustExist: true,
      }),
      (e: unknown) => e instanceof TerminalError && re.test(e.message),
    );
  await fails(
    { nictype: 'physical', parent: 'eth0' },
    /infiniband "ib": host interface "eth0" is not an InfiniBand interface/,
  );
  await fails(
    { nictype: 'physical', parent: 'ib9' },
    /host interface "ib9" is not an InfiniBand interface \(or does not exist\)/,
  );
  await fails({ nictype: 'sriov', parent: 'ib0' }, /infiniband "ib": nictype=sriov is not supported by svcd/);
  await rm(path.join(ibRoots.sysRoot, 'class', 'infiniband_verbs', 'uverbs0'), { recursive: true });
  await fails(
    { nictype: 'physical', parent: 'ib0' },
    /mlx5_0 has no verbs device in .*infiniband_verbs \(is the ib_uverbs module loaded\?\)/,
  );
});
