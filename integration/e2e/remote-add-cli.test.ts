/**
 * How every remote user connects: Debian's `lxc` 5.0.2 against svcd's HTTPS listener. With
 * core.https_address and core.trust_password set by `lxc config set` over the unix socket,
 * `lxc remote add … --password` (which sends `"certificate": ""` and relies on the TLS connection's
 * certificate) makes the CLI's own client certificate trusted, and `lxc list svcd:` lists the
 * containers over HTTPS. A wrong password is refused with a clear message and adds no certificate.
 * Each CLI has a private LXD_CONF (its own client certificate); a container with no rootfs source
 * (`none`) is created to be listed.
 */
import assert from 'node:assert/strict';
import { createHash, X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { teardownContainers, waitOp } from '../support/container-env.ts';
import { startDaemon, type Daemon } from '../support/daemon.ts';
import { client, freePort, type Client } from '../support/http.ts';
import { lxcCli, type LxcCli } from '../support/lxc-cli.ts';
import { ensureRootSubids, lxcSkipReason } from '../support/lxc-host.ts';

const skip = await lxcSkipReason();
if (skip) console.log(`# skipping lxc remote add e2e tests: ${skip}`);

const fingerprint = (pem: string) => createHash('sha256').update(new X509Certificate(pem).raw).digest('hex');

describe('lxc remote add with the trust password, then lxc list over HTTPS', { skip }, () => {
  let d: Daemon;
  let api: Client;
  let port = 0;
  const clis: LxcCli[] = [];
  const PASSWORD = 'remote-s3cret';
  const certificates = async () => (await api.get('/1.0/certificates')).json.metadata as string[];

  before(async () => {
    await ensureRootSubids();
    d = await startDaemon();
    api = client({ socketPath: d.socketPath });
    port = await freePort();
    // As docs/getting-started.md tells a user: the local CLI (unix socket, LXD_DIR) sets both keys.
    const local = await lxcCli(d.stateDir);
    clis.push(local);
    await local.ok(['config', 'set', 'core.https_address', `127.0.0.1:${port}`]);
    await local.ok(['config', 'set', 'core.trust_password', PASSWORD]);
    const config = (await api.get('/1.0')).json.metadata.config;
    assert.deepEqual(config, { 'core.https_address': `127.0.0.1:${port}`, 'core.trust_password': true });
    await waitOp(api, await api.post('/1.0/containers', { name: 'remote-c1', source: { type: 'none' } }));
  });
  after(async () => {
    await teardownContainers(d, api);
    for (const cli of clis) await cli.cleanup();
  });

  test('a wrong password is refused: non-zero exit, a clear message, no certificate added', async () => {
    const cli = await lxcCli(d.stateDir);
    clis.push(cli);
    const r = await cli.run([
      'remote',
      'add',
      'svcd',
      `https://127.0.0.1:${port}`,
      '--password',
      'wrong',
      '--accept-certificate',
    ]);
    assert.notEqual(r.code, 0, r.stdout);
    assert.match(r.stderr, /wrong or missing trust password/);
    assert.deepEqual(await certificates(), []);
    assert.doesNotMatch(await cli.ok(['remote', 'list', '--format', 'csv']), /^svcd,/m, 'the remote was not added');
  });

  test("the right password trusts the CLI's own certificate (taken from the connection); lxc list svcd: lists the containers", async () => {
    const cli = await lxcCli(d.stateDir);
    clis.push(cli);
    const added = await cli.run([
      'remote',
      'add',
      'svcd',
      `https://127.0.0.1:${port}`,
      '--password',
      PASSWORD,
      '--accept-certificate',
    ]);
    assert.equal(added.code, 0, `${added.stdout}\n${added.stderr}`);
    const own = await readFile(path.join(cli.conf, 'client.crt'), 'utf8');
    assert.deepEqual(await certificates(), [`/1.0/certificates/${fingerprint(own)}`]);
    const row = (await api.get(`/1.0/certificates/${fingerprint(own)}`)).json.metadata;
    assert.equal(row.type, 'client');
    assert.notEqual(row.name, '', 'a name is given when the CLI sends none');

    assert.match(
      await cli.ok(['remote', 'list', '--format', 'csv']),
      new RegExp(`^svcd,https://127\\.0\\.0\\.1:${port},lxd,tls,`, 'm'),
    );
    assert.equal((await cli.ok(['list', 'svcd:', '--format', 'csv', '-c', 'ns'])).trim(), 'remote-c1,STOPPED');
    assert.match(await cli.ok(['info', 'svcd:remote-c1']), /Name: remote-c1/);

    // Adding it again: already trusted, no second certificate.
    const again = await cli.run([
      'remote',
      'add',
      'svcd2',
      `https://127.0.0.1:${port}`,
      '--password',
      PASSWORD,
      '--accept-certificate',
    ]);
    assert.equal(again.code, 0, again.stderr);
    assert.equal((await certificates()).length, 1);
  });
});
