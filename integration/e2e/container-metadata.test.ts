/**
 * Container metadata and image templates on real LXC (extension container_edit_metadata): a busybox
 * image whose metadata.yaml has create, copy and start templates (one create_only, one aimed at a
 * symlink to a host file), rendered into the rootfs at create, copy and every start; the metadata
 * and template endpoints (ETag, bad input, names that would leave templates/); Debian's
 * `lxc config metadata` and `lxc config template`. `after` stops and deletes the containers, stops
 * the daemon and removes the temp dirs (the host file the image links to included).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { access, mkdtemp, readFile, readdir, stat, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { buildBusyboxImage } from '../support/busybox-image.ts';
import { teardownContainers, waitOp } from '../support/container-env.ts';
import { startDaemon, type Daemon } from '../support/daemon.ts';
import { client, eventually, expectError, type Client } from '../support/http.ts';
import { lxcCli, type LxcCli } from '../support/lxc-cli.ts';
import { ensureRootSubids, lxcSkipReason } from '../support/lxc-host.ts';

const run = promisify(execFile);
const skip = await lxcSkipReason();
if (skip) console.log(`# skipping container metadata e2e tests: ${skip}`);
const exists = (p: string) =>
  access(p).then(
    () => true,
    () => false,
  );

const TEMPLATE_FILES = {
  'motd.tpl':
    '{{ properties.greeting }} {{ container.name }} ({{ trigger }}, privileged={{ container.privileged }}, note={{ config_get("user.note", "none") }})\n',
  'once.tpl': '{{ trigger }} {{ path }}\n',
  'escape.tpl': 'written by a template\n',
  'conf.tpl': '{% for name, dev in devices %}{{ name }}={{ dev.type }};{% endfor %}\n',
};

describe('container metadata and templates on real LXC', { skip }, () => {
  let d: Daemon;
  let api: Client;
  let lxc: LxcCli;
  let work = '';
  let hostTarget = '';
  const lxcPath = () => path.join(d.stateDir, 'containers');

  async function idOf(name: string): Promise<string> {
    return eventually(async () => {
      for (const id of await readdir(lxcPath()).catch(() => [] as string[])) {
        const cfg = await readFile(path.join(lxcPath(), id, 'config'), 'utf8').catch(() => '');
        if (new RegExp(`^lxc.uts.name = ${name}$`, 'm').test(cfg)) return id;
      }
      return undefined;
    }, `the LXC config of ${name}`);
  }
  async function rootfsOf(name: string): Promise<string> {
    const m = /^lxc\.rootfs\.path = (?:dir:)?(.+)$/m.exec(
      await readFile(path.join(lxcPath(), await idOf(name), 'config'), 'utf8'),
    );
    assert.ok(m);
    return m[1]!;
  }
  const inRoot = async (name: string, p: string) => readFile(path.join(await rootfsOf(name), p), 'utf8');
  const setState = async (name: string, action: string) =>
    waitOp(api, await api.put(`/1.0/containers/${name}/state`, { action, force: action === 'stop' }));
  const metadata = (name: string) => api.get(`/1.0/containers/${name}/metadata`);

  before(async () => {
    await ensureRootSubids();
    work = await mkdtemp(path.join(os.tmpdir(), 'svcd-metadata-'));
    hostTarget = path.join(work, 'host-file');
    await writeFile(hostTarget, 'host content\n');
    const img = await buildBusyboxImage({
      dir: path.join(work, 'img'),
      format: 'unified',
      compression: 'gzip',
      templates: {
        '/etc/motd': { when: ['start'], template: 'motd.tpl', properties: { greeting: 'Welcome to' } },
        '/etc/created-once': { when: ['create', 'start'], template: 'once.tpl', create_only: true },
        '/etc/escape': { when: ['create'], template: 'escape.tpl' },
        '/var/lib/app/conf': { when: ['create'], template: 'conf.tpl' },
      },
      templateFiles: TEMPLATE_FILES,
      // A link from inside the image to a host path: a template must never write through it.
      customizeRootfs: (rootfs) => symlink(hostTarget, path.join(rootfs, 'etc/escape')),
    });
    if (img.format !== 'unified') throw new Error('unexpected image format');
    d = await startDaemon({ env: { SVCD_LOG_LEVEL: 'info' } });
    api = client({ socketPath: d.socketPath });
    lxc = await lxcCli(d.stateDir);
    await waitOp(
      api,
      await api.post('/1.0/images', await readFile(img.file), { 'Content-Type': 'application/octet-stream' }),
    );
    assert.equal((await api.post('/1.0/images/aliases', { name: 'md', target: img.fingerprint })).status, 200);
    await waitOp(
      api,
      await api.post('/1.0/containers', {
        name: 'md1',
        source: { type: 'image', alias: 'md' },
        config: { 'user.note': 'hello' },
      }),
    );
  });

  after(async () => {
    await lxc?.cleanup();
    await teardownContainers(d, api, [work]);
  });

  test("create renders the create templates into the stopped rootfs, owned by the container's root, never through a link", async () => {
    const rootfs = await rootfsOf('md1');
    assert.equal(await inRoot('md1', 'etc/hostname'), 'md1\n');
    assert.equal(await inRoot('md1', 'etc/created-once'), 'create /etc/created-once\n');
    assert.equal(await inRoot('md1', 'var/lib/app/conf'), 'root=disk;\n');
    assert.ok(!(await exists(path.join(rootfs, 'etc/motd'))), 'start templates wait for a start');
    const st = await stat(path.join(rootfs, 'etc/created-once'));
    assert.deepEqual(
      [st.uid, st.gid, st.mode & 0o777],
      [0, 0, 0o644],
      "on disk uid 0 = the container's root (idmapped rootfs)",
    );
    assert.equal((await stat(path.join(rootfs, 'var/lib/app'))).uid, 0);
    // The image's /etc/escape links to a host file: the link is resolved inside the rootfs.
    assert.equal(await readFile(hostTarget, 'utf8'), 'host content\n');
    assert.equal(await readFile(path.join(rootfs, hostTarget), 'utf8'), 'written by a template\n');
  });

  test('start renders the start templates at every start (with the current config); create_only files are left alone', async () => {
    await setState('md1', 'start');
    assert.equal(await inRoot('md1', 'etc/motd'), 'Welcome to md1 (start, privileged=false, note=hello)\n');
    assert.equal(await inRoot('md1', 'etc/created-once'), 'create /etc/created-once\n');
    // Inside the container the rendered file is root's.
    const { stdout } = await run('lxc-attach', [
      '-n',
      await idOf('md1'),
      '-P',
      lxcPath(),
      '--',
      '/bin/busybox',
      'stat',
      '-c',
      '%u:%g %a',
      '/etc/motd',
    ]);
    assert.equal(stdout.trim(), '0:0 644');
    await setState('md1', 'stop');
    assert.equal((await api.patch('/1.0/containers/md1', { config: { 'user.note': 'changed' } })).status, 200);
    await setState('md1', 'start');
    assert.equal(await inRoot('md1', 'etc/motd'), 'Welcome to md1 (start, privileged=false, note=changed)\n');
    await setState('md1', 'stop');
  });

  test('a copy keeps metadata and templates and renders the copy templates with its own name', async () => {
    await waitOp(api, await api.post('/1.0/containers', { name: 'md2', source: { type: 'copy', source: 'md1' } }));
    assert.equal(await inRoot('md2', 'etc/hostname'), 'md2\n');
    assert.equal(await inRoot('md1', 'etc/hostname'), 'md1\n');
    assert.deepEqual((await api.get('/1.0/containers/md2/metadata/templates')).json.metadata, [
      'conf.tpl',
      'escape.tpl',
      'hostname.tpl',
      'motd.tpl',
      'once.tpl',
    ]);
    assert.deepEqual((await metadata('md2')).json.metadata, (await metadata('md1')).json.metadata);
  });

  test('a backup carries metadata and templates (lxc export, import); an import renders no template', async () => {
    const out = path.join(work, 'md1.tar.gz');
    await lxc.ok(['export', 'md1', out]);
    const { stdout } = await run('tar', ['-tzf', out]);
    for (const f of ['backup/container/metadata.yaml', 'backup/container/templates/motd.tpl'])
      assert.ok(stdout.split('\n').includes(f), f);
    // The CLI cannot rename on import (no backup_override_name): the same upload over REST, with X-LXD-name.
    await waitOp(
      api,
      await api.post('/1.0/containers', await readFile(out), {
        'Content-Type': 'application/octet-stream',
        'X-LXD-name': 'md3',
      }),
    );
    assert.deepEqual((await metadata('md3')).json.metadata, (await metadata('md1')).json.metadata);
    assert.deepEqual((await api.get('/1.0/containers/md3/metadata/templates')).json.metadata, [
      'conf.tpl',
      'escape.tpl',
      'hostname.tpl',
      'motd.tpl',
      'once.tpl',
    ]);
    assert.equal(await inRoot('md3', 'etc/hostname'), 'md1\n', 'a restored backup is the container as it was');
    await waitOp(api, await api.delete('/1.0/containers/md3'));
  });

  test('a container from source none has empty metadata', async () => {
    await waitOp(api, await api.post('/1.0/containers', { name: 'bare', source: { type: 'none' } }));
    const m = (await metadata('bare')).json.metadata;
    assert.equal(m.architecture, (await api.get('/1.0/containers/bare')).json.metadata.architecture);
    assert.ok(m.creation_date > 1_600_000_000);
    assert.deepEqual([m.templates, m.properties], [{}, {}]);
    assert.deepEqual((await api.get('/1.0/containers/bare/metadata/templates')).json.metadata, []);
  });

  test('metadata GET/PUT with ETag; invalid metadata is 400', async () => {
    const got = await metadata('md1');
    assert.equal(got.status, 200);
    const m = got.json.metadata;
    assert.equal(m.properties.os, 'busybox');
    assert.deepEqual(m.templates['/etc/motd'], {
      when: ['start'],
      create_only: false,
      template: 'motd.tpl',
      properties: { greeting: 'Welcome to' },
    });
    assert.deepEqual(m.templates['/etc/created-once'].create_only, true);
    const etag = got.headers.etag!;
    assert.ok(etag);
    const changed = { ...m, properties: { ...m.properties, description: 'edited' } };
    const stale = await api.put('/1.0/containers/md1/metadata', changed, { 'If-Match': '"0000"' });
    expectError(stale, 412);
    const put = await api.put('/1.0/containers/md1/metadata', changed, { 'If-Match': etag });
    assert.equal(put.status, 200, put.text);
    const after1 = await metadata('md1');
    assert.equal(after1.json.metadata.properties.description, 'edited');
    assert.notEqual(after1.headers.etag, etag);
    // metadata.yaml on disk is what was stored.
    const onDisk = parseYaml(await readFile(path.join(path.dirname(await rootfsOf('md1')), 'metadata.yaml'), 'utf8'));
    assert.equal(onDisk.properties.description, 'edited');

    const bad = async (body: unknown, want: RegExp) =>
      assert.match(expectError(await api.put('/1.0/containers/md1/metadata', body), 400), want);
    await bad({ templates: { '/etc/x': { when: ['create'] } } }, /needs a "template"/);
    await bad({ templates: { '/etc/x': { when: ['boot'], template: 'a.tpl' } } }, /Invalid trigger "boot"/);
    await bad({ templates: { '/etc/x': { when: 'start', template: 'a.tpl' } } }, /list of triggers/);
    await bad(
      { templates: { '/etc/x': { when: ['start'], template: '../metadata.yaml' } } },
      /Invalid template file name/,
    );
    await bad({ templates: { 'etc/x': { when: ['start'], template: 'a.tpl' } } }, /Invalid template target/);
    await bad({ templates: { '/etc/../../x': { when: ['start'], template: 'a.tpl' } } }, /Invalid template target/);
    await bad({ templates: { '/etc/x': { when: ['start'], template: 'a.tpl', create_only: 'yes' } } }, /create_only/);
    await bad({ creation_date: 'yesterday' }, /creation_date/);
    await bad({ properties: ['a'] }, /map of strings/);
    await bad([], /JSON object/);
    assert.equal((await metadata('md1')).json.metadata.properties.description, 'edited', 'nothing was written');
    expectError(await metadata('nope'), 404);
    expectError(await api.put('/1.0/containers/nope/metadata', {}), 404);
  });

  test('template files: list, get, POST creates or overwrites, PUT replaces, DELETE; names cannot leave templates/', async () => {
    const base = '/1.0/containers/md1/metadata/templates';
    assert.deepEqual((await api.get(base)).json.metadata, [
      'conf.tpl',
      'escape.tpl',
      'hostname.tpl',
      'motd.tpl',
      'once.tpl',
    ]);
    const got = await api.get(`${base}?path=motd.tpl`);
    assert.equal(got.status, 200);
    assert.equal(got.headers['content-type'], 'application/octet-stream');
    assert.equal(got.text, TEMPLATE_FILES['motd.tpl']);
    const upload = (method: 'post' | 'put', name: string, body: string) =>
      api[method](`${base}?path=${encodeURIComponent(name)}`, body, { 'Content-Type': 'application/octet-stream' });
    assert.equal((await upload('post', 'new.tpl', 'one')).status, 200);
    assert.equal((await api.get(`${base}?path=new.tpl`)).text, 'one');
    assert.equal((await upload('post', 'new.tpl', 'two')).status, 200);
    assert.equal((await api.get(`${base}?path=new.tpl`)).text, 'two');
    assert.equal((await upload('put', 'new.tpl', 'three')).status, 200);
    assert.equal((await api.get(`${base}?path=new.tpl`)).text, 'three');
    assert.ok((await api.get(base)).json.metadata.includes('new.tpl'));
    const del = await api.delete(`${base}?path=new.tpl`);
    assert.equal(del.status, 200, del.text);
    expectError(await api.get(`${base}?path=new.tpl`), 404);
    expectError(await api.delete(`${base}?path=new.tpl`), 404);
    // Names that would leave templates/ (or hide there) are refused; nothing lands beside it.
    for (const name of ['../metadata.yaml', '../evil', 'a/b', '.hidden', '..', '/etc/passwd']) {
      expectError(await upload('post', name, 'x'), 400);
      expectError(await api.get(`${base}?path=${encodeURIComponent(name)}`), 400);
      expectError(await api.delete(`${base}?path=${encodeURIComponent(name)}`), 400);
    }
    assert.ok(!(await exists(path.join(path.dirname(await rootfsOf('md1')), 'evil'))));
    expectError(await upload('post', '', 'x'), 400);
    expectError(await api.delete(base), 400);
    expectError(await api.get('/1.0/containers/nope/metadata/templates'), 404);
  });

  test('a start template whose file is missing fails the start with a clear message; fixing it lets the container start', async () => {
    const cur = await metadata('md2');
    const m = cur.json.metadata;
    m.templates['/etc/broken'] = { when: ['start'], template: 'missing.tpl' };
    assert.equal((await api.put('/1.0/containers/md2/metadata', m, { 'If-Match': cur.headers.etag! })).status, 200);
    const failed = await waitOp(api, await api.put('/1.0/containers/md2/state', { action: 'start' }), 'Failure');
    assert.match(failed.err, /missing\.tpl.*missing/);
    assert.equal(
      (
        await api.post('/1.0/containers/md2/metadata/templates?path=missing.tpl', 'fixed {{ container.name }}', {
          'Content-Type': 'application/octet-stream',
        })
      ).status,
      200,
    );
    await setState('md2', 'start');
    assert.equal(await inRoot('md2', 'etc/broken'), 'fixed md2');
    await setState('md2', 'stop');
  });

  test('Debian lxc config metadata show/edit and lxc config template list/show/create/edit/delete', async () => {
    const shown = parseYaml(await lxc.ok(['config', 'metadata', 'show', 'md1']));
    assert.equal(shown.templates['/etc/motd'].template, 'motd.tpl');
    shown.properties.description = 'from the cli';
    await lxc.ok(['config', 'metadata', 'edit', 'md1'], stringifyYaml(shown));
    assert.equal((await metadata('md1')).json.metadata.properties.description, 'from the cli');
    assert.match(
      await lxc.fail(
        ['config', 'metadata', 'edit', 'md1'],
        'templates:\n  /etc/x:\n    when: [reboot]\n    template: a.tpl\n',
      ),
      /Invalid trigger/,
    );

    assert.match(await lxc.ok(['config', 'template', 'list', 'md1']), /motd\.tpl/);
    assert.equal(await lxc.ok(['config', 'template', 'show', 'md1', 'once.tpl']), TEMPLATE_FILES['once.tpl']);
    await lxc.ok(['config', 'template', 'create', 'md1', 'cli.tpl']);
    assert.equal((await api.get('/1.0/containers/md1/metadata/templates?path=cli.tpl')).status, 200);
    await lxc.ok(['config', 'template', 'edit', 'md1', 'cli.tpl'], 'from {{ container.name }}\n');
    assert.equal(
      (await api.get('/1.0/containers/md1/metadata/templates?path=cli.tpl')).text,
      'from {{ container.name }}\n',
    );
    await lxc.ok(['config', 'template', 'delete', 'md1', 'cli.tpl']);
    expectError(await api.get('/1.0/containers/md1/metadata/templates?path=cli.tpl'), 404);
    assert.ok((await lxc.fail(['config', 'template', 'show', 'md1', 'cli.tpl'])).length > 0);
  });
});
