/**
 * State actions that cannot apply fail as LXD 5.0's do: `PUT …/state` still answers 202 with an
 * operation, which ends as Failure (status_code 400) with LXD's message as `err`; desired state is not
 * written (checked in the database when the daemon runs on PostgreSQL, and by its effect: a later
 * converged write leaves the container as it was) and the host is untouched. A start while a stop
 * is still converging (and the reverse) is not refused. Then the real clients: pylxd's
 * `start()`/`stop()`/`freeze()` raise LXDAPIException with the message, `lxc start`/`stop`
 * exit non-zero with it. One daemon, a running `r1` and a stopped `s1` (busybox image).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import postgres from 'postgres';
import { lxcIdOf, teardownContainers, uploadBusybox, waitOp } from '../support/container-env.ts';
import { startDaemon, type Daemon } from '../support/daemon.ts';
import { client, eventually, type Client } from '../support/http.ts';
import { lxcCli, type LxcCli } from '../support/lxc-cli.ts';
import { ensureRootSubids, lxcSkipReason } from '../support/lxc-host.ts';
import { adminUrl, createTestDatabase } from '../support/postgres.ts';

const run = promisify(execFile);
const skip = await lxcSkipReason();
if (skip) console.log(`# skipping container state refusal e2e tests: ${skip}`);

/** One pylxd session per call: `python3 -c SCRIPT <action> <container>`; prints what the call raised. */
const PYLXD = String.raw`
import json, sys
import pylxd
from pylxd import exceptions
ct = pylxd.Client().containers.get(sys.argv[2])
out = {'raised': None}
try:
    getattr(ct, sys.argv[1])(wait=True)
except exceptions.LXDAPIException as e:
    out = {'raised': type(e).__name__, 'message': str(e)}
out['status'] = pylxd.Client().containers.get(sys.argv[2]).status
print(json.dumps(out))
`;

describe('state actions that cannot apply: failed operations, as LXD 5.0', { skip }, () => {
  let d: Daemon;
  let api: Client;
  let lxc: LxcCli;
  let work = '';
  let pg: { url: string; drop(): Promise<void> } | undefined;
  let sql: ReturnType<typeof postgres> | undefined;

  const status = async (name: string) => (await api.get(`/1.0/containers/${name}`)).json.metadata.status as string;
  const hostState = async (name: string) =>
    (
      await run('lxc-info', ['-P', path.join(d.stateDir, 'containers'), '-n', await lxcIdOf(d.stateDir, name), '-sH'])
    ).stdout.trim();
  /** The desired row as the database holds it (PostgreSQL runs only). */
  const desired = async (name: string) => {
    const [row] = await sql!`select generation, power, power_request from containers where name = ${name}`;
    return row as { generation: number; power: string; power_request: unknown };
  };
  /** PUT …/state; returns the 202 answer and the operation once it ended. */
  async function act(name: string, body: Record<string, unknown>) {
    const res = await api.put(`/1.0/containers/${name}/state`, body);
    assert.equal(res.status, 202, res.text);
    assert.equal(res.json.type, 'async');
    const done = await api.get(`${res.json.operation}/wait?timeout=120`);
    return { res, op: done.json.metadata };
  }
  /** A refused action: 202, an operation ending as Failure 400 with `message`; desired row and host untouched. */
  async function refused(name: string, body: Record<string, unknown>, message: string, wantStatus: string) {
    const before = sql && (await desired(name));
    const { res, op } = await act(name, body);
    assert.deepEqual(res.json.metadata.resources, { containers: [`/1.0/containers/${name}`] });
    assert.equal(op.status, 'Failure', JSON.stringify(op));
    assert.equal(op.status_code, 400);
    assert.equal(op.err, message);
    // Still readable afterwards (the CLI reads it once more), with the same end.
    const again = (await api.get(res.json.operation)).json.metadata;
    assert.equal(again.status_code, 400);
    assert.equal(again.err, message);
    if (sql)
      assert.deepEqual(await desired(name), before, 'no desired write: generation, power and power request unchanged');
    assert.equal(await status(name), wantStatus);
    assert.equal(await hostState(name), wantStatus.toUpperCase());
  }

  before(async () => {
    await ensureRootSubids();
    work = await mkdtemp(path.join(os.tmpdir(), 'svcd-refusals-'));
    if (adminUrl) {
      pg = await createTestDatabase();
      sql = postgres(pg.url, { max: 1, onnotice: () => {} });
    } else console.log('# SVCD_TEST_PG_URL not set: the desired rows are checked by their effect only');
    d = await startDaemon({ env: { SVCD_LOG_LEVEL: 'info' }, ...(pg ? { databaseUrl: pg.url } : {}) });
    api = client({ socketPath: d.socketPath });
    lxc = await lxcCli(d.stateDir);
    await lxc.ok(['list']); // the CLI's first run prints a welcome on stderr
    await uploadBusybox(api, work);
    for (const name of ['r1', 's1'])
      await waitOp(api, await api.post('/1.0/containers', { name, source: { type: 'image', alias: 'bb' } }));
    await waitOp(api, await api.put('/1.0/containers/r1/state', { action: 'start' }));
    await eventually(async () => (await status('r1')) === 'Running', 'r1 running');
  });
  after(async () => {
    await teardownContainers(d, api, [work]);
    await lxc?.cleanup();
    await sql?.end().catch(() => {});
    await pg?.drop().catch(() => {});
  });

  test('start of a running container, unfreeze of a running one: Failure 400, still running', async () => {
    await refused('r1', { action: 'start', timeout: -1 }, 'The instance is already running', 'Running');
    await refused('r1', { action: 'unfreeze' }, 'The container is already running', 'Running');
  });

  test('stop, restart, freeze, unfreeze of a stopped container: Failure 400 with LXD messages, still stopped', async () => {
    await refused('s1', { action: 'stop', force: true }, 'The instance is already stopped', 'Stopped');
    await refused('s1', { action: 'stop' }, 'The instance is already stopped', 'Stopped');
    await refused('s1', { action: 'restart' }, 'The instance is already stopped', 'Stopped');
    await refused('s1', { action: 'freeze' }, "The instance isn't running", 'Stopped');
    await refused('s1', { action: 'unfreeze' }, "The container isn't running", 'Stopped');
  });

  test('a frozen container: freeze again and start are refused, the container stays frozen; unfreeze works', async () => {
    assert.equal((await act('r1', { action: 'freeze' })).op.status, 'Success');
    assert.equal(await status('r1'), 'Frozen');
    await refused('r1', { action: 'freeze' }, 'The container is already frozen', 'Frozen');
    await refused('r1', { action: 'start' }, 'The instance is already running', 'Frozen');
    assert.equal((await act('r1', { action: 'unfreeze' })).op.status, 'Success');
    assert.equal(await status('r1'), 'Running');
  });

  test('a refused action wrote no desire: a later converged write leaves the containers as they were', async () => {
    // Had the refused freeze/unfreeze/restart of s1 been written, s1 would be started by now.
    const put = async (name: string) => {
      const cur = (await api.get(`/1.0/containers/${name}`)).json.metadata;
      return waitOp(
        api,
        await api.put(`/1.0/containers/${name}`, { ...cur, config: { ...cur.config, 'user.barrier': '1' } }),
      );
    };
    await put('s1');
    await put('r1');
    assert.equal(await status('s1'), 'Stopped');
    assert.equal(await hostState('s1'), 'STOPPED');
    assert.equal(await status('r1'), 'Running');
    assert.equal(await hostState('r1'), 'RUNNING');
  });

  test('a start while a stop is still converging applies (and a stop while a start is): the newest desire wins', async () => {
    // r1 running: stop, then start at once, without waiting for the stop.
    const stop = await api.put('/1.0/containers/r1/state', { action: 'stop', force: true });
    const start = await api.put('/1.0/containers/r1/state', { action: 'start' });
    assert.equal(stop.status, 202);
    const startOp = (await api.get(`${start.json.operation}/wait?timeout=120`)).json.metadata;
    assert.equal(startOp.status, 'Success', startOp.err);
    assert.notEqual(
      (await api.get(`${stop.json.operation}/wait?timeout=120`)).json.metadata.status_code,
      400,
      'the stop was not refused either',
    );
    await eventually(
      async () => (await status('r1')) === 'Running' && (await hostState('r1')) === 'RUNNING',
      'r1 running again',
    );
    // s1 stopped: start, then stop at once.
    const start2 = await api.put('/1.0/containers/s1/state', { action: 'start' });
    const stop2 = await api.put('/1.0/containers/s1/state', { action: 'stop', force: true });
    assert.equal(start2.status, 202);
    const stopOp = (await api.get(`${stop2.json.operation}/wait?timeout=120`)).json.metadata;
    assert.equal(stopOp.status, 'Success', stopOp.err);
    await eventually(
      async () => (await status('s1')) === 'Stopped' && (await hostState('s1')) === 'STOPPED',
      's1 stopped again',
    );
  });

  test('pylxd 2.2.10: start() of a running and stop()/freeze() of a stopped container raise LXDAPIException', async () => {
    const py = async (action: string, name: string) => {
      const { stdout } = await run('/usr/bin/python3', ['-c', PYLXD, action, name], {
        env: { PATH: '/usr/bin:/bin', LXD_DIR: d.stateDir, PYTHONDONTWRITEBYTECODE: '1' },
        timeout: 120_000,
      });
      return JSON.parse(stdout.trim().split('\n').pop()!);
    };
    assert.deepEqual(await py('start', 'r1'), {
      raised: 'LXDAPIException',
      message: 'The instance is already running',
      status: 'Running',
    });
    assert.deepEqual(await py('stop', 's1'), {
      raised: 'LXDAPIException',
      message: 'The instance is already stopped',
      status: 'Stopped',
    });
    assert.deepEqual(await py('freeze', 's1'), {
      raised: 'LXDAPIException',
      message: "The instance isn't running",
      status: 'Stopped',
    });
    // What applies still works through pylxd.
    assert.deepEqual(await py('start', 's1'), { raised: null, status: 'Running' });
    assert.deepEqual(await py('stop', 's1'), { raised: null, status: 'Stopped' });
    assert.equal(await hostState('r1'), 'RUNNING');
    assert.equal(await hostState('s1'), 'STOPPED');
  });

  test('lxc 5.0.2: `lxc start` of a running and `lxc stop` of a stopped container exit non-zero with the message', async () => {
    const startErr = await lxc.fail(['start', 'r1']);
    assert.match(startErr, /The instance is already running/);
    const stopErr = await lxc.fail(['stop', 's1']);
    assert.match(stopErr, /The instance is already stopped/);
    const pauseErr = await lxc.fail(['pause', 's1']);
    assert.match(pauseErr, /The instance isn't running/);
    assert.equal(await hostState('r1'), 'RUNNING');
    assert.equal(await hostState('s1'), 'STOPPED');
    // And the same commands where they apply.
    await lxc.ok(['stop', 'r1', '--force']);
    assert.equal(await hostState('r1'), 'STOPPED');
    await lxc.ok(['start', 'r1']);
    assert.equal(await hostState('r1'), 'RUNNING');
  });
});
