/**
 * unix-char hotplug on real LXC (unix_device_hotplug): a `required=false` device whose host node is missing
 * leaves the container starting without it; once the test `mknod`s the node (the numbers of /dev/zero, under
 * a directory the test made) the node appears in the running container within ~2 s, with no API call, and
 * goes again when the host node goes. A required device whose node is missing fails the start clearly.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { startBusyboxDaemon, teardownContainers, waitOp as waitOpOf } from '../support/container-env.ts';
import type { Daemon } from '../support/daemon.ts';
import { eventually, type Client } from '../support/http.ts';
import { lxcSkipReason } from '../support/lxc-host.ts';

const run = promisify(execFile);
const skip = await lxcSkipReason();
if (skip) console.log(`# skipping unix hotplug e2e tests: ${skip}`);

describe('unix-char hotplug (real LXC)', { skip }, () => {
  let d: Daemon;
  let api: Client;
  let imgDir = '';
  let work = '';
  const waitOp = (res: { status: number; json: any; text: string }, want = 'Success') => waitOpOf(api, res, want);

  before(async () => {
    ({ d, api, imgDir } = await startBusyboxDaemon());
    work = await mkdtemp(path.join(os.tmpdir(), 't17hp-'));
  });
  after(async () => {
    await teardownContainers(d, api, [imgDir, work]);
  });

  test('the node follows the host node into and out of the running container', async () => {
    const src = path.join(work, 'sub', 'hp0');
    await waitOp(
      await api.post('/1.0/containers', {
        name: 't17hp',
        source: { type: 'image', alias: 'bb' },
        devices: { hp: { type: 'unix-char', source: src, path: '/dev/t17hp', required: 'false' } },
      }),
    );
    await waitOp(await api.put('/1.0/containers/t17hp/state', { action: 'start' }));
    const pid: number = (await api.get('/1.0/containers/t17hp/state')).json.metadata.pid;
    const inside = `/proc/${pid}/root/dev/t17hp`;
    await assert.rejects(stat(inside), /ENOENT/, 'a missing optional node is skipped at the start');

    // Its directory does not exist yet either: the watch follows it down.
    await mkdir(path.dirname(src));
    await run('mknod', ['-m', '0666', src, 'c', '1', '5']);
    const t0 = Date.now();
    const st = await eventually(async () => stat(inside).catch(() => undefined), 'node in the container', 5_000);
    assert.ok(Date.now() - t0 < 2_500, `appeared after ${Date.now() - t0} ms`);
    assert.ok(st.isCharacterDevice());
    assert.equal(st.rdev, (await stat('/dev/zero')).rdev);
    const exec = await waitOp(
      await api.post('/1.0/containers/t17hp/exec', {
        command: ['sh', '-c', 'head -c 5 /dev/t17hp | wc -c | grep -qx 5'],
        'wait-for-websocket': false,
      }),
    );
    assert.equal(exec.metadata.return, 0, 'readable inside');

    await rm(src);
    await eventually(
      async () => ((await stat(inside).catch(() => undefined)) ? undefined : true),
      'node gone from the container',
      5_000,
    );
    assert.equal((await api.get('/1.0/containers/t17hp/state')).json.metadata.pid, pid, 'no restart');

    // And back again.
    await run('mknod', ['-m', '0666', src, 'c', '1', '5']);
    await eventually(async () => stat(inside).catch(() => undefined), 'node back in the container', 5_000);
  });

  test('a required node that is missing fails the start, naming it', async () => {
    const src = path.join(work, 'absent');
    await waitOp(
      await api.post('/1.0/containers', {
        name: 't17rq',
        source: { type: 'image', alias: 'bb' },
        devices: { rq: { type: 'unix-char', source: src, path: '/dev/t17rq' } },
      }),
    );
    const op = await waitOp(await api.put('/1.0/containers/t17rq/state', { action: 'start' }), 'Failure');
    assert.match(op.err, new RegExp(`unix-char "rq".*${src}.*does not exist`));
  });
});
