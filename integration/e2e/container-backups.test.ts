import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { teardownContainers, uploadBusybox, waitOp } from '../support/container-env.ts';
import { startDaemon, type Daemon } from '../support/daemon.ts';
import { client, eventually, expectError, request, type Client } from '../support/http.ts';
import { lxcCli, type LxcCli } from '../support/lxc-cli.ts';
import { ensureRootSubids } from '../support/lxc-host.ts';

const run = promisify(execFile);

describe('container backups: create, list, export, import (API and lxc export/import), expiry', () => {
  let d: Daemon;
  let api: Client;
  let cli: LxcCli;
  let work: string;

  before(async () => {
    await ensureRootSubids();
    work = await mkdtemp(path.join(os.tmpdir(), 'svcd-bk-'));
    d = await startDaemon({ env: { SVCD_LOG_LEVEL: 'info' } });
    api = client({ socketPath: d.socketPath });
    cli = await lxcCli(d.stateDir);
    await uploadBusybox(api, work);
    await waitOp(
      api,
      await api.post('/1.0/containers', {
        name: 'src',
        config: { 'user.note': 'kept' },
        source: { type: 'image', alias: 'bb' },
      }),
    );
  });
  after(async () => {
    await cli?.cleanup();
    await teardownContainers(d, api, [work]);
  });

  test('create (async), list, get, rename, export as a tarball with backup/index.yaml and the rootfs, delete', async () => {
    const op = await waitOp(api, await api.post('/1.0/containers/src/backups', { name: 'b1', expiry: 3600 }));
    assert.deepEqual(op.resources.backups, ['/1.0/backups/b1']);
    assert.deepEqual((await api.get('/1.0/containers/src/backups')).json.metadata, ['/1.0/containers/src/backups/b1']);
    const b = (await api.get('/1.0/containers/src/backups/b1')).json.metadata;
    assert.equal(b.name, 'b1');
    assert.ok(Date.parse(b.expires_at) > Date.now() + 3500_000);
    expectError(await api.post('/1.0/containers/src/backups', { name: 'b1' }), 409);
    expectError(await api.post('/1.0/containers/src/backups', { optimized_storage: true }), 400);
    await waitOp(api, await api.post('/1.0/containers/src/backups/b1', { name: 'b2' }));
    const res = await request({ socketPath: d.socketPath }, 'GET', '/1.0/containers/src/backups/b2/export');
    assert.equal(res.status, 200);
    assert.match(String(res.headers['content-disposition']), /attachment; filename=src-b2\.tar\.gz/);
    await waitOp(api, await api.delete('/1.0/containers/src/backups/b2'));
    expectError(await api.get('/1.0/containers/src/backups/b2'), 404);
  });

  test('lxc export / lxc import round trip: the imported container has the config and files and runs', async () => {
    const out = path.join(work, 'exported.tar.gz');
    await cli.ok(['export', 'src', out]);
    assert.ok((await stat(out)).size > 100_000);
    const { stdout } = await run('tar', ['-tzf', out]);
    assert.ok(stdout.split('\n').includes('backup/index.yaml'));
    assert.ok(stdout.includes('backup/container/rootfs/bin/busybox'));
    assert.deepEqual(
      (await api.get('/1.0/containers/src/backups')).json.metadata,
      [],
      'the CLI deleted its temporary backup',
    );
    await waitOp(api, await api.delete('/1.0/containers/src'));
    await cli.ok(['import', out]);
    const c = (await api.get('/1.0/containers/src')).json.metadata;
    assert.equal(c.config['user.note'], 'kept');
    await waitOp(api, await api.put('/1.0/containers/src/state', { action: 'start' }));
    const st = await eventually(async () => {
      const s = (await api.get('/1.0/containers/src/state')).json.metadata;
      return s.pid > 0 ? s : undefined;
    }, 'the imported container to run');
    assert.ok((await stat(`/proc/${st.pid}/root/bin/busybox`)).size > 0);
    await waitOp(api, await api.put('/1.0/containers/src/state', { action: 'stop', force: true }));
  });

  test('import refuses garbage and name clashes, leaving nothing behind', async () => {
    expectError(
      await api.post('/1.0/containers', Buffer.from('not a tarball'), { 'Content-Type': 'application/octet-stream' }),
      400,
    );
    const out = path.join(work, 'exported.tar.gz');
    expectError(
      await api.post('/1.0/containers', await readFile(out), { 'Content-Type': 'application/octet-stream' }),
      409,
    );
    assert.deepEqual((await api.get('/1.0/containers')).json.metadata, ['/1.0/containers/src']);
    const imports = path.join(d.stateDir, 'backups', 'imports');
    assert.deepEqual(
      (await (await import('node:fs/promises')).readdir(imports)).filter((f) => !f.startsWith('.')),
      [],
    );
  });

  test('lxc list and lxc info work (they read backups and snapshots)', async () => {
    const list = await cli.ok(['list', '--format', 'csv', '-c', 'ns']);
    assert.match(list, /^src,STOPPED$/m);
    const info = await cli.ok(['info', 'src']);
    assert.match(info, /Name: src/);
  });

  test('a backup with an expiry is deleted automatically once it elapses', async () => {
    await waitOp(
      api,
      await api.post('/1.0/containers/src/backups', {
        name: 'short',
        expires_at: new Date(Date.now() + 1500).toISOString(),
      }),
    );
    await eventually(
      async () => (await api.get('/1.0/containers/src/backups')).json.metadata.length === 0,
      'the expired backup to go',
      60_000,
    );
  });
});
