/**
 * svcd as an image server and as a puller, driven by Debian's lxc 5.0.2 unmodified, with two svcd
 * daemons on loopback (support/two-hosts.ts) and the simplestreams test server. One lxc with a
 * private LXD_CONF adds both daemons as remotes with the trust password, the simplestreams server
 * with `--protocol simplestreams` (its certificate in servercerts/, as for any self-signed
 * server); another lxc adds b with `--public` (its client certificate is never trusted). Then: guests see only public images; `lxc image copy`
 * (a public image by alias with --auto-update, and a private one, for which lxc asks b for a
 * secret and a pulls with it); `lxc image refresh` after b's alias moved; `lxc launch b:bb a:c1`
 * and `lxc launch ss:busybox a:c2`; on a terminal, lxc shows the pull's progress.
 */
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { teardownContainers } from '../support/container-env.ts';
import { lxcCli, type LxcCli } from '../support/lxc-cli.ts';
import { ensureRootSubids, lxcSkipReason } from '../support/lxc-host.ts';
import { startSimplestreamsServer, type SimplestreamsServer } from '../support/simplestreams-server.ts';
import { importTestImage, startTwoHosts, stopHosts, type Host } from '../support/two-hosts.ts';

const skip = await lxcSkipReason();
const PASSWORD = 'image-s3cret';

describe('lxc with svcd as image server and puller', { skip }, () => {
  let a: Host;
  let b: Host;
  let ss: SimplestreamsServer;
  let lxc: LxcCli;
  let guestLxc: LxcCli;
  let pub = '';
  let priv = '';
  const dirs: string[] = [];
  const imagesOf = async (remote: string, cli = lxc) =>
    JSON.parse(await cli.ok(['image', 'list', `${remote}:`, '--format', 'json'])) as any[];

  before(async () => {
    await ensureRootSubids();
    [a, b] = await startTwoHosts();
    for (const h of [a, b])
      assert.equal((await h.api.patch('/1.0', { config: { 'core.trust_password': PASSWORD } })).status, 200);
    const p = await importTestImage(b, { alias: 'bb', public: true });
    const q = await importTestImage(b, { alias: 'secretimg', public: false, creationDate: 1_650_000_000 });
    dirs.push(p.dir, q.dir);
    pub = p.fingerprint;
    priv = q.fingerprint;
    ss = await startSimplestreamsServer({ kinds: ['unified'] });
    lxc = await lxcCli(a.daemon.stateDir);
    for (const h of [a, b])
      await lxc.ok(['remote', 'add', h.name, h.url, '--password', PASSWORD, '--accept-certificate']);
    // Another lxc (its own client certificate, never trusted) for the --public remote.
    guestLxc = await lxcCli(a.daemon.stateDir);
    await guestLxc.ok(['remote', 'add', 'bpub', b.url, '--public', '--accept-certificate']);
    await lxc.ok(['remote', 'add', 'ss', ss.url, '--protocol', 'simplestreams', '--public']);
    await mkdir(path.join(lxc.conf, 'servercerts'), { recursive: true });
    await writeFile(path.join(lxc.conf, 'servercerts', 'ss.crt'), ss.certificate);
  });
  after(async () => {
    await ss?.close();
    await teardownContainers(a?.daemon, a?.api);
    await stopHosts([a, b], dirs);
    await lxc?.cleanup();
    await guestLxc?.cleanup();
  });

  test('guests see public images only: the API over HTTPS without a certificate, and a --public remote', async () => {
    const listed = (await b.guest().get('/1.0/images')).json.metadata as string[];
    assert.deepEqual(listed, [`/1.0/images/${pub}`]);
    assert.deepEqual((await b.guest().get('/1.0/images/aliases')).json.metadata, ['/1.0/images/aliases/bb']);
    assert.equal((await b.guest().get(`/1.0/images/${priv}`)).status, 404);
    assert.equal((await b.guest().get(`/1.0/images/${priv}/export`)).status, 404);
    assert.deepEqual(
      (await imagesOf('bpub', guestLxc)).map((i) => i.fingerprint),
      [pub],
    );
    assert.deepEqual(
      (await imagesOf('b')).map((i) => i.fingerprint).sort(),
      [pub, priv].sort(),
      'the trusted remote sees both',
    );
  });

  test('lxc image copy b:bb a: --alias x --auto-update, and a private image (lxc gets a secret from b, a pulls with it)', async () => {
    await lxc.ok(['image', 'copy', 'b:bb', 'a:', '--alias', 'x', '--auto-update']);
    const img = (await a.api.get('/1.0/images/aliases/x')).json.metadata;
    assert.equal(img.target, pub);
    const got = (await a.api.get(`/1.0/images/${pub}`)).json.metadata;
    assert.equal(got.auto_update, true);
    assert.equal(got.update_source.alias, 'bb');
    await lxc.ok(['image', 'copy', 'b:secretimg', 'a:', '--alias', 'p']);
    assert.equal((await a.api.get('/1.0/images/aliases/p')).json.metadata.target, priv);
  });

  test('lxc image refresh after the source alias moved', async () => {
    assert.match(await lxc.ok(['image', 'refresh', 'a:x']), /already up to date/i);
    const next = await importTestImage(b, { public: true, creationDate: 1_600_000_000 });
    dirs.push(next.dir);
    assert.equal(
      (await b.api.put('/1.0/images/aliases/bb', { target: next.fingerprint, description: '' })).status,
      200,
    );
    assert.match(await lxc.ok(['image', 'refresh', 'a:x']), /refreshed/i);
    assert.equal((await a.api.get('/1.0/images/aliases/x')).json.metadata.target, next.fingerprint);
    assert.equal((await a.api.get(`/1.0/images/${pub}`)).status, 404);
  });

  test('lxc launch b:bb a:c1 and lxc launch ss:busybox a:c2', async () => {
    await lxc.ok(['launch', 'b:bb', 'a:c1']);
    assert.equal((await a.api.get('/1.0/containers/c1/state')).json.metadata.status, 'Running');
    await lxc.ok(['launch', `ss:${ss.aliases[0]}`, 'a:c2']);
    assert.equal((await a.api.get('/1.0/containers/c2/state')).json.metadata.status, 'Running');
    const cached = (await a.api.get('/1.0/images?recursion=1')).json.metadata as any[];
    assert.ok(cached.some((i) => i.cached && i.update_source?.protocol === 'simplestreams'));
  });

  test('on a terminal, lxc launch shows the download progress svcd reports (download_progress)', async () => {
    // An image a does not have yet (lxc resolves the alias itself and sends the fingerprint): a downloads it.
    const fresh = await importTestImage(b, { alias: 'fresh', public: true, creationDate: 1_550_000_000 });
    dirs.push(fresh.dir);
    const r = await lxc.terminal(['launch', 'b:fresh', 'a:c3']);
    assert.equal(r.code, 0, r.stdout);
    assert.match(r.stdout, /Retrieving image: .*\d+%/, r.stdout);
    assert.equal((await a.api.get('/1.0/containers/c3/state')).json.metadata.status, 'Running');
  });
});
