import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { startDaemon, type Daemon } from '../support/daemon.ts';
import { client, eventually, expectError, type Client } from '../support/http.ts';
import { lxcCli, type LxcCli } from '../support/lxc-cli.ts';

interface Profile {
  name: string;
  description: string;
  config: Record<string, string>;
  devices: Record<string, Record<string, string>>;
  used_by: string[];
}

describe('the real lxc CLI (5.0.2) against svcd', () => {
  let d: Daemon;
  let api: Client;
  let lxc: LxcCli;
  const monitors: ChildProcess[] = [];

  const profile = async (name: string, project = 'default'): Promise<Profile> => {
    const q = project === 'default' ? '' : `?project=${encodeURIComponent(project)}`;
    const res = await api.get(`/1.0/profiles/${encodeURIComponent(name)}${q}`);
    assert.equal(res.status, 200, res.text);
    return res.json.metadata as Profile;
  };
  const profileNames = (json: string) => (JSON.parse(json) as Profile[]).map((p) => p.name).sort();

  before(async () => {
    d = await startDaemon();
    api = client({ socketPath: d.socketPath });
    lxc = await lxcCli(d.stateDir);
  });
  after(async () => {
    for (const m of monitors) if (m.exitCode === null && m.signalCode === null) m.kill('SIGKILL');
    await d?.destroy();
    await lxc?.cleanup();
  });

  test('lxc query /1.0 is the trusted server view; lxc query /1.0/projects lists the default project', async () => {
    const server = JSON.parse(await lxc.ok(['query', '/1.0']));
    assert.equal(server.auth, 'trusted');
    assert.equal(server.api_version, '1.0');
    assert.equal(server.environment.server_pid, d.proc.pid);
    assert.deepEqual(server.api_extensions, (await api.get('/1.0')).json.metadata.api_extensions);
    assert.ok(server.api_extensions.includes('projects'));
    assert.deepEqual(JSON.parse(await lxc.ok(['query', '/1.0/projects'])), ['/1.0/projects/default']);
  });

  test('lxc info shows the server description', async () => {
    const info = parseYaml(await lxc.ok(['info']));
    assert.equal(info.auth, 'trusted');
    assert.equal(info.environment.driver, 'lxc');
    assert.equal(info.environment.server_pid, d.proc.pid);
    assert.deepEqual(info.api_extensions, (await api.get('/1.0')).json.metadata.api_extensions);
  });

  test('lxc profile create / list / show', async () => {
    assert.match(await lxc.ok(['profile', 'create', 'web']), /Profile web created/);
    assert.deepEqual(await profile('web'), { name: 'web', description: '', config: {}, devices: {}, used_by: [] });
    assert.deepEqual(profileNames(await lxc.ok(['profile', 'list', '--format', 'json'])), ['default', 'web']);
    const shown = parseYaml(await lxc.ok(['profile', 'show', 'web']));
    assert.deepEqual(shown, await profile('web'));
  });

  test('lxc profile edit reads YAML on stdin: description, config and devices land', async () => {
    const yaml = [
      'description: Web servers',
      'config:',
      '  limits.cpu: "2"',
      '  user.tier: front',
      'devices:',
      '  eth0:',
      '    type: nic',
      '    nictype: bridged',
      '    parent: br0',
      '    name: eth0',
      '',
    ].join('\n');
    await lxc.ok(['profile', 'edit', 'web'], yaml);
    const p = await profile('web');
    assert.equal(p.description, 'Web servers');
    assert.deepEqual(p.config, { 'limits.cpu': '2', 'user.tier': 'front' });
    assert.deepEqual(p.devices, { eth0: { type: 'nic', nictype: 'bridged', parent: 'br0', name: 'eth0' } });
    assert.deepEqual(parseYaml(await lxc.ok(['profile', 'show', 'web'])), p);
  });

  test('lxc profile set / get / unset (unset PUTs the key as "", which removes it)', async () => {
    await lxc.ok(['profile', 'set', 'web', 'limits.memory', '1GiB']);
    assert.equal((await profile('web')).config['limits.memory'], '1GiB');
    assert.equal((await lxc.ok(['profile', 'get', 'web', 'limits.memory'])).trim(), '1GiB');
    await lxc.ok(['profile', 'unset', 'web', 'user.tier']);
    // limits.cpu has a validator that refuses "": unsetting it must still work.
    await lxc.ok(['profile', 'unset', 'web', 'limits.cpu']);
    const p = await profile('web');
    assert.deepEqual(p.config, { 'limits.memory': '1GiB' });
    assert.equal(p.description, 'Web servers', 'set/unset keep the rest of the profile');
    assert.deepEqual(Object.keys(p.devices), ['eth0']);
  });

  test('lxc profile set with an unknown key fails with the daemon message and changes nothing', async () => {
    const before = await profile('web');
    const daemonMessage = expectError(await api.patch('/1.0/profiles/web', { config: { 'limits.bogus': '1' } }), 400);
    const stderr = await lxc.fail(['profile', 'set', 'web', 'limits.bogus', '1']);
    assert.ok(stderr.includes(daemonMessage), `stderr should carry "${daemonMessage}": ${stderr}`);
    assert.deepEqual(await profile('web'), before);
  });

  test('lxc profile rename / copy / delete', async () => {
    const orig = await profile('web');
    assert.match(await lxc.ok(['profile', 'rename', 'web', 'front']), /renamed/);
    expectError(await api.get('/1.0/profiles/web'), 404);
    assert.deepEqual(await profile('front'), { ...orig, name: 'front' });

    await lxc.ok(['profile', 'copy', 'front', 'front2']);
    const copy = await profile('front2');
    assert.deepEqual({ ...copy, name: 'front' }, await profile('front'));

    await lxc.ok(['profile', 'delete', 'front2']);
    expectError(await api.get('/1.0/profiles/front2'), 404);
    assert.deepEqual(profileNames(await lxc.ok(['profile', 'list', '--format', 'json'])), ['default', 'front']);
  });

  test('protected and conflicting profile changes fail in the CLI with the daemon message', async () => {
    assert.match(await lxc.fail(['profile', 'delete', 'default']), /"default" profile cannot be deleted/);
    assert.equal((await profile('default')).name, 'default');

    const conflict = expectError(await api.post('/1.0/profiles/front', { name: 'default' }), 409);
    const stderr = await lxc.fail(['profile', 'rename', 'front', 'default']);
    assert.ok(stderr.includes(conflict), `stderr should carry "${conflict}": ${stderr}`);
    assert.equal((await profile('front')).name, 'front');
    assert.deepEqual((await profile('default')).config, {});
  });

  test('lxc project list / create / show / set / unset / edit', async () => {
    const listed = JSON.parse(await lxc.ok(['project', 'list', '--format', 'json'])) as { name: string }[];
    assert.deepEqual(
      listed.map((p) => p.name),
      ['default'],
    );

    assert.match(await lxc.ok(['project', 'create', 'alpha', '--config', 'user.owner=ann']), /Project alpha created/);
    const created = (await api.get('/1.0/projects/alpha')).json.metadata;
    assert.deepEqual(created.config, { 'features.images': 'true', 'features.profiles': 'true', 'user.owner': 'ann' });
    assert.deepEqual(parseYaml(await lxc.ok(['project', 'show', 'alpha'])), created);

    await lxc.ok(['project', 'set', 'alpha', 'user.team', 'ops']);
    await lxc.ok(['project', 'unset', 'alpha', 'user.owner']);
    assert.deepEqual((await api.get('/1.0/projects/alpha')).json.metadata.config, {
      'features.images': 'true',
      'features.profiles': 'true',
      'user.team': 'ops',
    });

    const yaml = [
      'description: Team alpha',
      'config:',
      '  features.images: "true"',
      '  features.profiles: "true"',
      '  user.cost: "42"',
      '',
    ].join('\n');
    await lxc.ok(['project', 'edit', 'alpha'], yaml);
    const edited = (await api.get('/1.0/projects/alpha')).json.metadata;
    assert.equal(edited.description, 'Team alpha');
    assert.deepEqual(edited.config, { 'features.images': 'true', 'features.profiles': 'true', 'user.cost': '42' });
  });

  test('lxc project rename waits for its operation and the project really moves', async () => {
    assert.match(await lxc.ok(['project', 'rename', 'alpha', 'beta']), /renamed/);
    expectError(await api.get('/1.0/projects/alpha'), 404);
    const beta = (await api.get('/1.0/projects/beta')).json.metadata;
    assert.equal(beta.description, 'Team alpha');
    assert.deepEqual(beta.used_by, ['/1.0/profiles/default?project=beta']);
  });

  test('lxc project switch: profile list and create act in that project; switch back', async () => {
    await lxc.ok(['project', 'switch', 'beta']);
    try {
      assert.match(await readFile(path.join(lxc.conf, 'config.yml'), 'utf8'), /project: beta/);
      const inBeta = JSON.parse(await lxc.ok(['profile', 'list', '--format', 'json'])) as Profile[];
      assert.deepEqual(inBeta, [await profile('default', 'beta')], "only beta's own default profile is listed");
      // The default profile the CLI now edits is beta's, not the default project's.
      await lxc.ok(['profile', 'set', 'default', 'user.where', 'beta']);
      assert.equal((await profile('default', 'beta')).config['user.where'], 'beta');
      assert.deepEqual((await profile('default')).config, {});

      await lxc.ok(['profile', 'create', 'scoped']);
      assert.equal((await profile('scoped', 'beta')).name, 'scoped');
      expectError(await api.get('/1.0/profiles/scoped'), 404);
      assert.deepEqual(profileNames(await lxc.ok(['profile', 'list', '--format', 'json'])), ['default', 'scoped']);
      // A non-empty project cannot be deleted.
      await lxc.fail(['project', 'delete', 'beta']);
      await lxc.ok(['profile', 'delete', 'scoped']);
      expectError(await api.get('/1.0/profiles/scoped?project=beta'), 404);
    } finally {
      await lxc.ok(['project', 'switch', 'default']);
    }
    assert.deepEqual(profileNames(await lxc.ok(['profile', 'list', '--format', 'json'])), ['default', 'front']);
  });

  test('lxc project delete: the default project is refused, an empty project goes', async () => {
    assert.match(await lxc.fail(['project', 'delete', 'default']), /"default" project cannot be deleted/);
    assert.equal((await api.get('/1.0/projects/default')).status, 200);
    await lxc.ok(['project', 'delete', 'beta']);
    expectError(await api.get('/1.0/projects/beta'), 404);
    expectError(await api.get('/1.0/profiles/default?project=beta'), 404);
    assert.deepEqual(JSON.parse(await lxc.ok(['query', '/1.0/projects'])), ['/1.0/projects/default']);
  });

  test('lxc operation list works (LXD clients get their map by status; others the spec list)', async () => {
    await lxc.ok(['operation', 'list']);
    const ops = await api.get('/1.0/operations');
    assert.equal(ops.status, 200);
    assert.ok(Array.isArray(ops.json.metadata));
    const asLxd = await api.get('/1.0/operations', undefined, { 'User-Agent': 'Go-http-client/1.1' });
    assert.equal(asLxd.status, 200);
    assert.ok(!Array.isArray(asLxd.json.metadata) && typeof asLxd.json.metadata === 'object');
  });

  test('lxc monitor --type=lifecycle sees profile-created', async () => {
    // --debug makes the CLI say on stderr when its events websocket is connected.
    const mon = lxc.spawn(['monitor', '--type=lifecycle', '--debug']);
    monitors.push(mon);
    let out = '';
    let err = '';
    mon.stdout!.on('data', (b: Buffer) => (out += b.toString()));
    mon.stderr!.on('data', (b: Buffer) => (err += b.toString()));
    try {
      await eventually(() => {
        if (mon.exitCode !== null) throw new Error(`lxc monitor exited ${mon.exitCode}: ${err}`);
        return err.includes('Connected to the websocket');
      }, 'lxc monitor to connect');
      await lxc.ok(['profile', 'create', 'watched']);
      const event = await eventually(() => {
        // lxc monitor prints each event as a YAML document followed by a blank line.
        const docs = out
          .split(/\n\s*\n/)
          .filter((s) => s.trim() !== '')
          .map((s) => parseYaml(s));
        return docs.find(
          (e) => e?.metadata?.action === 'profile-created' && e.metadata.source === '/1.0/profiles/watched',
        );
      }, 'a profile-created event in lxc monitor');
      assert.equal(event.type, 'lifecycle');
      assert.equal(event.project, 'default');
      assert.match(event.timestamp, /^\d{4}-\d{2}-\d{2}T/);
    } finally {
      mon.kill('SIGTERM');
    }
    await lxc.ok(['profile', 'delete', 'watched']);
  });
});
