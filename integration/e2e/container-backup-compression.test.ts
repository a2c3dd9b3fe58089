/**
 * backup_compression against the daemon as a process: the server key backups.compression_algorithm,
 * the per-backup compression_algorithm over it, the exported file's magic bytes, import of each format
 * (sniffed, not named), and the lxc CLI's `export --compression` / `import`. One container, reused.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, readdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { teardownContainers, uploadBusybox, waitOp } from '../support/container-env.ts';
import { startDaemon, type Daemon } from '../support/daemon.ts';
import { client, eventually, expectError, request, type Client } from '../support/http.ts';
import { lxcCli, type LxcCli } from '../support/lxc-cli.ts';
import { ensureRootSubids } from '../support/lxc-host.ts';

const KEY = 'backups.compression_algorithm';
/** What each format's file starts with (plain tar: "ustar" at 257). */
const MAGIC: Record<string, { at: number; bytes: Buffer }> = {
  xz: { at: 0, bytes: Buffer.from([0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00]) },
  bzip2: { at: 0, bytes: Buffer.from('BZh') },
  zstd: { at: 0, bytes: Buffer.from([0x28, 0xb5, 0x2f, 0xfd]) },
  gzip: { at: 0, bytes: Buffer.from([0x1f, 0x8b]) },
  none: { at: 257, bytes: Buffer.from('ustar') },
};
const hasMagic = (file: Buffer, format: string) =>
  file.subarray(MAGIC[format]!.at, MAGIC[format]!.at + MAGIC[format]!.bytes.length).equals(MAGIC[format]!.bytes);

describe('backup_compression: server key, per-backup override, export magic, import of each format, lxc export --compression', () => {
  let d: Daemon;
  let api: Client;
  let cli: LxcCli;
  let work: string;
  const exported: Record<string, Buffer> = {};
  const fileUrl = (name: string, p: string) => `/1.0/containers/${name}/files?path=${encodeURIComponent(p)}`;
  const readNote = async (name: string) => {
    const r = await api.get(fileUrl(name, '/root/note'));
    assert.equal(r.status, 200, r.text);
    return r.text;
  };
  const serverConfig = async () => (await api.get('/1.0')).json.metadata.config as Record<string, string>;
  const backups = async () => (await api.get('/1.0/containers/bkc-src/backups')).json.metadata as string[];
  const containers = async () => ((await api.get('/1.0/containers')).json.metadata as string[]).sort();
  const exportBackup = async (backup: string) => {
    const res = await request({ socketPath: d.socketPath }, 'GET', `/1.0/containers/bkc-src/backups/${backup}/export`);
    assert.equal(res.status, 200, res.text);
    return { body: res.body!, disposition: String(res.headers['content-disposition']) };
  };
  const importTarball = (file: Buffer, headers: Record<string, string> = {}) =>
    api.post('/1.0/containers', file, { 'Content-Type': 'application/octet-stream', ...headers });

  before(async () => {
    await ensureRootSubids();
    work = await mkdtemp(path.join(os.tmpdir(), 'svcd-bkc-'));
    d = await startDaemon({ env: { SVCD_LOG_LEVEL: 'info' } });
    api = client({ socketPath: d.socketPath });
    cli = await lxcCli(d.stateDir);
    await uploadBusybox(api, work);
    await waitOp(
      api,
      await api.post('/1.0/containers', {
        name: 'bkc-src',
        config: { 'user.note': 'kept' },
        source: { type: 'image', alias: 'bb' },
      }),
    );
    assert.equal(
      (await api.post(fileUrl('bkc-src', '/root/note'), 'compressed', { 'Content-Type': 'application/octet-stream' }))
        .status,
      200,
    );
  });
  after(async () => {
    await cli?.cleanup();
    await teardownContainers(d, api, [work]);
  });

  test('bad values are 400s naming the key, and nothing is written', async () => {
    assert.ok((await api.get('/1.0')).json.metadata.api_extensions.includes('backup_compression'));
    assert.equal((await api.patch('/1.0', { config: { [KEY]: 'bzip2' } })).status, 200);
    assert.equal((await serverConfig())[KEY], 'bzip2');
    for (const bad of ['nope', 'lzma', 'squashfs']) {
      const msg = expectError(await api.patch('/1.0', { config: { [KEY]: bad } }), 400);
      assert.match(msg, /backups\.compression_algorithm/);
      assert.equal((await serverConfig())[KEY], 'bzip2', 'the old value stays');
    }
    for (const bad of ['lzma', 'squashfs', 'foo']) {
      const msg = expectError(
        await api.post('/1.0/containers/bkc-src/backups', { name: 'bad', compression_algorithm: bad }),
        400,
      );
      assert.match(msg, /compression_algorithm/);
    }
    assert.deepEqual(await backups(), [], 'no backup was made');
  });

  test('the server key (xz) applies when the backup names none; none and bzip2 per backup override it; the export is the file as it is', async () => {
    expectError(await api.put('/1.0', { config: { [KEY]: 'foo' } }), 400);
    assert.equal((await api.patch('/1.0', { config: { [KEY]: 'xz' } })).status, 200);
    assert.equal((await serverConfig())[KEY], 'xz');
    for (const [backup, body, format, suffix] of [
      ['b-default', {}, 'xz', '.tar.xz'],
      ['b-none', { compression_algorithm: 'none' }, 'none', '.tar'],
      ['b-bzip2', { compression_algorithm: 'bzip2' }, 'bzip2', '.tar.bz2'],
    ] as const) {
      await waitOp(api, await api.post('/1.0/containers/bkc-src/backups', { name: backup, ...body }));
      const { body: file, disposition } = await exportBackup(backup);
      assert.ok(hasMagic(file, format), `${backup} is ${format}: ${file.subarray(0, 8).toString('hex')}`);
      for (const other of Object.keys(MAGIC))
        if (other !== format) assert.ok(!hasMagic(file, other), `${backup} is not ${other}`);
      assert.equal(disposition, `attachment; filename=bkc-src-${backup}${suffix}`);
      exported[format] = file;
    }
    // The uncompressed tarball is the largest; the stored file is what was streamed.
    assert.ok(exported.none!.length > exported.xz!.length && exported.none!.length > exported.bzip2!.length);
    // Clearing the key brings gzip back.
    assert.equal((await api.patch('/1.0', { config: { [KEY]: '' } })).status, 200);
    await waitOp(api, await api.post('/1.0/containers/bkc-src/backups', { name: 'b-gzip' }));
    assert.ok(hasMagic((await exportBackup('b-gzip')).body, 'gzip'));
  });

  test('each exported format imports as a new container with its config and files; one of them starts', async () => {
    for (const format of ['xz', 'none', 'bzip2']) {
      const name = `bkc-${format}`;
      await waitOp(api, await importTarball(exported[format]!, { 'X-LXD-name': name }));
      const c = (await api.get(`/1.0/containers/${name}`)).json.metadata;
      assert.equal(c.config['user.note'], 'kept', format);
      assert.equal(await readNote(name), 'compressed', format);
    }
    await waitOp(api, await api.put('/1.0/containers/bkc-xz/state', { action: 'start' }));
    await eventually(
      async () => (await api.get('/1.0/containers/bkc-xz/state')).json.metadata.pid > 0,
      'the imported container to run',
    );
    await waitOp(api, await api.put('/1.0/containers/bkc-xz/state', { action: 'stop', force: true }));
    for (const format of ['xz', 'none', 'bzip2']) await waitOp(api, await api.delete(`/1.0/containers/bkc-${format}`));
  });

  test('an upload of an unknown format is a 400 saying so, and nothing is made', async () => {
    const zip = Buffer.concat([Buffer.from([0x50, 0x4b, 0x03, 0x04]), Buffer.alloc(2048, 7)]);
    // xz's magic cut short (a 4-byte prefix) is not xz either.
    const nearXz = Buffer.concat([MAGIC.xz!.bytes.subarray(0, 4), Buffer.alloc(2048)]);
    for (const body of [zip, nearXz]) {
      const msg = expectError(await importTarball(body, { 'X-LXD-name': 'bkc-bad' }), 400);
      assert.match(msg, /not a \(compressed\) tarball/);
    }
    assert.deepEqual(await containers(), ['/1.0/containers/bkc-src']);
    const imports = path.join(d.stateDir, 'backups', 'imports');
    assert.deepEqual(
      (await readdir(imports).catch(() => [] as string[])).filter((f) => !f.startsWith('.')),
      [],
    );
  });

  test('lxc export --compression zstd writes zstd; lxc import brings the container back', async () => {
    const out = path.join(work, 'f.tar.zst');
    await cli.ok(['export', 'bkc-src', out, '--compression', 'zstd']);
    assert.ok(hasMagic(await readFile(out), 'zstd'));
    assert.deepEqual(
      (await backups()).sort(),
      ['b-bzip2', 'b-default', 'b-gzip', 'b-none'].map((b) => `/1.0/containers/bkc-src/backups/${b}`),
      'the CLI removed its temporary backup',
    );
    // The CLI's name argument needs backup_override_name (not announced): the container goes, and comes back by its index name.
    await waitOp(api, await api.delete('/1.0/containers/bkc-src'));
    await cli.ok(['import', out]);
    assert.equal((await api.get('/1.0/containers/bkc-src')).json.metadata.config['user.note'], 'kept');
    assert.equal(await readNote('bkc-src'), 'compressed');
    // --compression none: a plain tarball.
    const plain = path.join(work, 'f.tar');
    await cli.ok(['export', 'bkc-src', plain, '--compression', 'none']);
    assert.ok(hasMagic(await readFile(plain), 'none'));
  });
});
