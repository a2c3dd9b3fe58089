import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { validateDevices } from './devices.ts';
import { validateConfig } from './config-keys.ts';
import { instanceConfigKeys } from './instance-config.ts';
import { ValidationError } from './errors.ts';

test('gpu, usb and infiniband keys are validated, naming the device and the key', () => {
  validateDevices({
    g: {
      type: 'gpu',
      gputype: 'physical',
      vendorid: '10de',
      productid: '1EB8',
      id: '0',
      pci: '0000:01:00.0',
      uid: '0',
      gid: '44',
      mode: '0660',
    },
    g2: { type: 'gpu', pci: '01:00.0' },
    u: { type: 'usb', vendorid: '046d', productid: 'c52b', uid: '1000', gid: '1000', mode: '0666', required: 'true' },
    u2: { type: 'usb', vendorid: '0781', required: 'false' },
    ib: { type: 'infiniband', nictype: 'physical', parent: 'ib0', name: 'ib0', mtu: '2044' },
  });
  const refuse = (devices: Record<string, Record<string, string>>, re: RegExp) =>
    assert.throws(
      () => validateDevices(devices),
      (e: Error) => e instanceof ValidationError && re.test(e.message),
      JSON.stringify(devices),
    );
  refuse(
    { g: { type: 'gpu', vendorid: '10d' } },
    /Device "g" \(gpu\): invalid "vendorid": must be 4 hexadecimal digits/,
  );
  refuse({ g: { type: 'gpu', pci: '1:0.0' } }, /Device "g" \(gpu\): invalid "pci": must be a PCI address/);
  refuse({ g: { type: 'gpu', id: 'card0' } }, /invalid "id"/);
  refuse({ g: { type: 'gpu', mode: '999' } }, /invalid "mode"/);
  refuse(
    { g: { type: 'gpu', gputype: 'mig' } },
    /Device "g" \(gpu\): invalid "gputype": "mig" GPUs need .*only "physical"/,
  );
  refuse({ g: { type: 'gpu', gputype: 'mdev' } }, /"gputype": "mdev"/);
  refuse({ g: { type: 'gpu', 'mig.uuid': 'x' } }, /Device "g" \(gpu\): unknown property "mig.uuid"/);
  refuse({ u: { type: 'usb', productid: 'zz' } }, /Device "u" \(usb\): invalid "productid"/);
  refuse({ u: { type: 'usb', busnum: '1' } }, /unknown property "busnum"/);
  refuse(
    { u: { type: 'usb', vendorid: '46d' } },
    /Device "u" \(usb\): invalid "vendorid": must be 4 hexadecimal digits/,
  );
  refuse({ u: { type: 'usb', required: 'maybe' } }, /Device "u" \(usb\): invalid "required"/);
  refuse(
    { ib: { type: 'infiniband', parent: 'ib0' } },
    /Device "ib" \(infiniband\): "nictype" \(physical or sriov\) is required/,
  );
  refuse({ ib: { type: 'infiniband', nictype: 'physical' } }, /"parent" .* is required/);
  refuse({ ib: { type: 'infiniband', nictype: 'macvlan', parent: 'ib0' } }, /invalid "nictype"/);
  refuse({ ib: { type: 'infiniband', nictype: 'physical', parent: 'ib0', hwaddr: 'zz' } }, /invalid "hwaddr"/);
  refuse(
    {
      ib: {
        type: 'infiniband',
        nictype: 'physical',
        parent: 'ib0',
        hwaddr: '80:00:02:08:fe:80:00:00:00:00:00:00:00:02:c9:03:00:0e:7b:51',
      },
    },
    /Device "ib" \(infiniband\): "hwaddr" is not supported/,
  );
});

test("gpu_runtime: nvidia.runtime=true needs LXC's nvidia hook and nvidia-container-cli, and names what is missing; the other nvidia keys are validated", async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'svcd-nvidia-'));
  const saved = { PATH: process.env.PATH, SVCD_LXC_HOOKS: process.env.SVCD_LXC_HOOKS };
  const tool = async (file: string) => {
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, '#!/bin/sh\nexit 0\n', { mode: 0o755 });
  };
  const runtime = () => validateConfig('container', { 'nvidia.runtime': 'true' }, instanceConfigKeys);
  const refused = (re: RegExp) =>
    assert.throws(
      runtime,
      (e: Error) => e instanceof ValidationError && e.message.includes('"nvidia.runtime"') && re.test(e.message),
    );
  try {
    process.env.SVCD_LXC_HOOKS = path.join(dir, 'hooks');
    process.env.PATH = path.join(dir, 'bin');
    validateConfig('container', { 'nvidia.runtime': 'false' }, instanceConfigKeys);
    refused(/NVIDIA container tooling, which this host lacks: LXC's NVIDIA hook .*hooks\/nvidia is missing/);
    await tool(path.join(dir, 'hooks', 'nvidia'));
    refused(/nvidia-container-cli is not installed/);
    await tool(path.join(dir, 'bin', 'nvidia-container-cli'));
    runtime();
  } finally {
    for (const [k, v] of Object.entries(saved))
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    await rm(dir, { recursive: true, force: true });
  }
  validateConfig(
    'container',
    {
      'nvidia.driver.capabilities': 'compute,utility',
      'nvidia.require.cuda': 'cuda>=11.0',
      'nvidia.require.driver': 'driver>=470',
    },
    instanceConfigKeys,
  );
  validateConfig('container', { 'nvidia.driver.capabilities': 'all' }, instanceConfigKeys);
  for (const [k, v] of [
    ['nvidia.driver.capabilities', 'compute,bogus'],
    ['nvidia.runtime', 'maybe'],
    ['nvidia.nope', '1'],
  ] as const)
    assert.throws(
      () => validateConfig('container', { [k]: v }, instanceConfigKeys),
      (e: Error) => e instanceof ValidationError && e.message.includes(k),
    );
});
