/**
 * What svcd answers right after it starts is what the host shows now: a container killed while svcd was
 * down (a host reboot, an operator's lxc-stop) is never reported running with the init it had before.
 * svcd looks at every container once before its API answers (agent.ts).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { startBusyboxDaemon, teardownContainers, waitOp as waitOpOf } from '../support/container-env.ts';
import type { Daemon } from '../support/daemon.ts';
import { eventually, type Client } from '../support/http.ts';
import { lxcSkipReason } from '../support/lxc-host.ts';

const run = promisify(execFile);
const skip = await lxcSkipReason();

describe('the state right after a restart (real LXC)', { skip }, () => {
  let d: Daemon;
  let api: Client;
  let imgDir = '';
  const waitOp = (res: { status: number; json: any; text: string }, want = 'Success') => waitOpOf(api, res, want);
  const state = async (name: string) => (await api.get(`/1.0/containers/${name}/state`)).json.metadata;

  before(async () => {
    ({ d, api, imgDir } = await startBusyboxDaemon());
  });
  after(async () => {
    if (d?.proc.exitCode !== null || d?.proc.signalCode !== null) await d?.restart().catch(() => {});
    await teardownContainers(d, api, [imgDir]);
  });

  test('a container killed while svcd was down is not reported running with its old init', async () => {
    // Not started again at boot: what the first answer must show is the container as the host has it, stopped.
    await waitOp(
      await api.post('/1.0/containers', {
        name: 'r1',
        config: { 'boot.autostart': 'false' },
        source: { type: 'image', alias: 'bb' },
      }),
    );
    await waitOp(await api.put('/1.0/containers/r1/state', { action: 'start' }));
    await eventually(async () => (await state('r1')).status === 'Running', 'r1 running', 20_000);
    const oldPid = (await state('r1')).pid as number;
    assert.ok(oldPid > 0);

    assert.equal(await d.stop(), 0, 'a plain stop: the containers keep running');
    const lxcPath = path.join(d.stateDir, 'containers');
    for (const id of await readdir(lxcPath)) await run('lxc-stop', ['-k', '-n', id, '-P', lxcPath]).catch(() => {});
    await d.restart();

    // The very first answer, and the container list's.
    const first = await state('r1');
    assert.equal(
      first.status,
      'Stopped',
      `first answer after the restart: ${first.status} with pid ${first.pid} (the old init was ${oldPid})`,
    );
    const listed = (await api.get('/1.0/containers?recursion=1')).json.metadata.find(
      (c: { name: string }) => c.name === 'r1',
    );
    assert.equal(listed.status, 'Stopped');
  });
});
