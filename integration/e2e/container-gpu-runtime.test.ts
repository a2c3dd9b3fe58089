/**
 * gpu_runtime on real LXC: `nvidia.runtime=true` makes LXC run its own nvidia mount hook
 * (/usr/share/lxc/hooks/nvidia, Debian's lxc) at the start, with the environment it reads. This host has no
 * NVIDIA tooling: without it the write is refused naming what is missing (container-hw-devices.test.ts);
 * here a daemon whose PATH holds a stand-in `nvidia-container-cli` (it records its arguments and succeeds)
 * shows the hook really runs it, with the driver capabilities the config asks for.
 */
import assert from 'node:assert/strict';
import { access, chmod, mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { teardownContainers, uploadBusybox, waitOp } from '../support/container-env.ts';
import { startDaemon, type Daemon } from '../support/daemon.ts';
import { client, expectError, type Client } from '../support/http.ts';
import { ensureRootSubids, lxcSkipReason } from '../support/lxc-host.ts';

const HOOK = '/usr/share/lxc/hooks/nvidia';
const skip =
  (await lxcSkipReason()) ??
  (await access(HOOK).then(
    () => undefined,
    () => `no ${HOOK} (Debian's lxc package ships it)`,
  ));
if (skip) console.log(`# skipping gpu_runtime e2e tests: ${skip}`);

describe("gpu_runtime: LXC's nvidia hook runs nvidia-container-cli at the start (a stand-in for it)", { skip }, () => {
  let d: Daemon;
  let api: Client;
  let imgDir = '';
  let tools = '';
  const calls = () => readFile(path.join(tools, 'calls.log'), 'utf8').catch(() => '');

  before(async () => {
    await ensureRootSubids();
    tools = await mkdtemp(path.join(os.tmpdir(), 'svcd-nvidia-'));
    // The hook runs as the unprivileged container's root: the log it appends to must be writable by anyone.
    await chmod(tools, 0o777);
    await mkdir(path.join(tools, 'bin'));
    await writeFile(
      path.join(tools, 'bin', 'nvidia-container-cli'),
      `#!/bin/sh\necho "$@" >> ${path.join(tools, 'calls.log')}\nexit 0\n`,
      { mode: 0o755 },
    );
    d = await startDaemon({
      env: {
        SVCD_LOG_LEVEL: 'info',
        PATH: `${path.join(tools, 'bin')}:${process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin'}`,
      },
    });
    api = client({ socketPath: d.socketPath });
    imgDir = await mkdtemp(path.join(os.tmpdir(), 'svcd-img-'));
    await uploadBusybox(api, imgDir);
  });
  after(async () => {
    await teardownContainers(d, api, [imgDir, tools]);
  });

  test('the hook runs the tool with the capabilities asked for; bad values are 400s; a running container keeps it at its next start', async () => {
    expectError(
      await api.post('/1.0/containers', {
        name: 'g0',
        config: { 'nvidia.driver.capabilities': 'compute,warp' },
        source: { type: 'image', alias: 'bb' },
      }),
      400,
    );
    await waitOp(
      api,
      await api.post('/1.0/containers', {
        name: 'g1',
        config: { 'nvidia.runtime': 'true', 'nvidia.driver.capabilities': 'compute,video' },
        source: { type: 'image', alias: 'bb' },
      }),
    );
    await waitOp(api, await api.put('/1.0/containers/g1/state', { action: 'start', timeout: -1 }));
    const st = (await api.get('/1.0/containers/g1/state')).json.metadata;
    assert.equal(st.status, 'Running');
    const line = (await calls()).trim().split('\n').at(-1) ?? '';
    assert.match(line, /^--user configure .*--compute --video \S+$/, `the hook's call: ${line}`);
    // Stopped and started without it: the hook is gone from the config, and nothing is called.
    await waitOp(api, await api.put('/1.0/containers/g1/state', { action: 'stop', force: true, timeout: -1 }));
    assert.equal((await api.patch('/1.0/containers/g1', { config: { 'nvidia.runtime': 'false' } })).status, 200);
    const before = await calls();
    await waitOp(api, await api.put('/1.0/containers/g1/state', { action: 'start', timeout: -1 }));
    assert.equal(await calls(), before);
  });
});
