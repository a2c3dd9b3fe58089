/**
 * `svcd apply` and `svcd diff` end to end, as a user runs them (the svcd command, a process), against a
 * real svcd with real LXC and, with the very same cases, against Debian's LXD 5.0.2: apply in
 * dependency order, an idempotent re-apply (ETags and init pids unchanged), dry-run, a live memory
 * limit seen in the container's cgroup, drift shown by diff and repaired by apply, invalid documents
 * that change nothing, prune, stdin, and HTTPS with a client certificate. Test bridges have no NAT,
 * no routing and no IPv6; the last case prunes everything the document made.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { stringify } from 'yaml';
import { makeClientCertificate } from '../support/certs.ts';
import { cgroupFile } from '../support/cgroup.ts';
import { lxdTarget, svcdTarget, type DeclareTarget } from '../support/declare-targets.ts';
import { lxcSkipReason } from '../support/lxc-host.ts';
import { lxdAvailable } from '../support/lxd-daemon.ts';
import { safeNetworkConfig } from '../support/networks.ts';
import { planLines, svcdCli } from '../support/svcd-cli.ts';
import { pemBody } from '../support/two-hosts.ts';

const skip = await lxcSkipReason();
if (skip) console.log(`# skipping svcd apply e2e tests: ${skip}`);
const lxdSkip = skip ?? (lxdAvailable() ? undefined : "Debian's lxd is not installed");
if (lxdSkip) console.log(`# skipping svcd apply against LXD: ${lxdSkip}`);

/** The document: a test bridge, a custom volume, a profile, c1 (running, the volume mounted) and c2 (stopped). */
function document(t: DeclareTarget, opts: { memory?: string; c2?: boolean; volume?: boolean; extra?: object[] } = {}) {
  const volume = opts.volume ?? true;
  return stringify({
    networks: [{ name: t.bridge, config: safeNetworkConfig(t.cidr) }],
    storage_volumes: volume ? [{ pool: 'default', name: 'decl-data', config: {} }] : [],
    profiles: [
      {
        name: 'decl-web',
        config: { 'user.role': 'web' },
        devices: { eth0: { type: 'nic', network: t.bridge, name: 'eth0' } },
      },
    ],
    containers: [
      {
        name: 'decl-c1',
        source: { type: 'image', alias: 'bb' },
        profiles: ['default', 'decl-web'],
        config: opts.memory ? { 'limits.memory': opts.memory } : {},
        devices: volume ? { data: { type: 'disk', pool: 'default', source: 'decl-data', path: '/data' } } : {},
      },
      ...(opts.c2 === false ? [] : [{ name: 'decl-c2', source: { type: 'image', alias: 'bb' }, state: 'stopped' }]),
      ...(opts.extra ?? []),
    ],
  });
}

function applyCases(label: string, skipReason: string | undefined, make: () => Promise<DeclareTarget>, svcd: boolean) {
  describe(`svcd apply and diff against ${label}`, { skip: skipReason }, () => {
    let t: DeclareTarget;
    let work = '';
    let cli: ReturnType<typeof svcdCli>;
    const run = async (args: string[], doc?: string, input?: string) => {
      const file = path.join(work, 'doc.yaml');
      if (doc !== undefined) await writeFile(file, doc);
      return cli(doc !== undefined ? [...args, '-f', file] : args, input);
    };
    const etag = async (url: string) => {
      const r = await t.api.get(url);
      assert.equal(r.status, 200, `${url}: ${r.text}`);
      return r.headers.etag;
    };
    const OBJECTS = [
      '/1.0/profiles/decl-web',
      '/1.0/storage-pools/default/volumes/custom/decl-data',
      '/1.0/containers/decl-c1',
      '/1.0/containers/decl-c2',
    ];
    const status = async (c: string) => (await t.api.get(`/1.0/containers/${c}`)).json.metadata?.status;
    const pidOf = async (c: string) => (await t.api.get(`/1.0/containers/${c}/state`)).json.metadata.pid as number;

    before(async () => {
      work = await mkdtemp(path.join(os.tmpdir(), 'svcd-decl-'));
      t = await make();
      cli = svcdCli(t.dir);
    });
    after(async () => {
      await t?.destroy();
      await rm(work, { recursive: true, force: true });
    });

    test('apply creates in dependency order and returns once the containers are as asked', async () => {
      const r = await run(['apply'], document(t));
      assert.equal(r.code, 0, r.err);
      assert.deepEqual(planLines(r), [
        `+ network ${t.bridge}`,
        '+ storage volume default/decl-data',
        '+ profile decl-web',
        '+ container decl-c1',
        '+ container decl-c2',
        '5 to add, 0 to change, 0 to delete',
      ]);
      assert.equal(await status('decl-c1'), 'Running');
      assert.equal(await status('decl-c2'), 'Stopped');
      const c1 = (await t.api.get('/1.0/containers/decl-c1')).json.metadata;
      assert.deepEqual(c1.profiles, ['default', 'decl-web']);
      assert.equal(c1.devices.data.source, 'decl-data');
      assert.equal(c1.expanded_devices.eth0.network, t.bridge);
    });

    test('re-applying the same document writes nothing: same ETags, same init pid', async () => {
      const before = await Promise.all(OBJECTS.map(etag));
      const network = await etag(`/1.0/networks/${t.bridge}`);
      const pid = await pidOf('decl-c1');
      const r = await run(['apply'], document(t));
      assert.equal(r.code, 0, r.err);
      assert.deepEqual(planLines(r), ['0 to add, 0 to change, 0 to delete']);
      assert.deepEqual(await Promise.all(OBJECTS.map(etag)), before);
      assert.equal(await etag(`/1.0/networks/${t.bridge}`), network);
      assert.equal(await pidOf('decl-c1'), pid, 'no restart');
    });

    test('--dry-run prints the plan and changes nothing', async () => {
      const before = await Promise.all(OBJECTS.map(etag));
      const extra = [{ name: 'decl-c3', source: { type: 'image', alias: 'bb' } }];
      const r = await run(['apply', '--dry-run'], document(t, { memory: '96MiB', extra }));
      assert.equal(r.code, 0, r.err);
      assert.deepEqual(planLines(r), [
        '~ container decl-c1: config.limits.memory',
        '+ container decl-c3',
        '1 to add, 1 to change, 0 to delete',
      ]);
      assert.equal((await t.api.get('/1.0/containers/decl-c3')).status, 404);
      assert.deepEqual(await Promise.all(OBJECTS.map(etag)), before);
    });

    test('a memory limit reaches the running container live: its cgroup, without a restart', async () => {
      const pid = await pidOf('decl-c1');
      const r = await run(['apply'], document(t, { memory: '96MiB' }));
      assert.equal(r.code, 0, r.err);
      assert.deepEqual(planLines(r), [
        '~ container decl-c1: config.limits.memory',
        '0 to add, 1 to change, 0 to delete',
      ]);
      assert.equal(await cgroupFile(pid, 'memory', 'memory.limit_in_bytes', 'memory.max'), String(96 * 1024 * 1024));
      assert.equal(await pidOf('decl-c1'), pid);
    });

    test('diff names a change made behind its back; apply repairs it', async () => {
      const c1 = (await t.api.get('/1.0/containers/decl-c1')).json.metadata;
      const patched = await t.api.patch('/1.0/containers/decl-c1', { config: { ...c1.config, 'user.drift': 'yes' } });
      assert.ok(patched.status < 300, patched.text);
      const started = await t.api.put('/1.0/containers/decl-c2/state', { action: 'start' });
      assert.equal((await t.api.get(`${started.json.operation}/wait?timeout=60`)).json.metadata.status, 'Success');
      const doc = document(t, { memory: '96MiB' });
      const d = await run(['diff'], doc);
      assert.equal(d.code, 1, d.err);
      assert.deepEqual(planLines(d), [
        '~ container decl-c1: config.user.drift',
        '~ container decl-c2: state',
        '0 to add, 2 to change, 0 to delete',
      ]);
      const r = await run(['apply'], doc);
      assert.equal(r.code, 0, r.err);
      assert.equal(await status('decl-c2'), 'Stopped');
      assert.equal((await t.api.get('/1.0/containers/decl-c1')).json.metadata.config['user.drift'], undefined);
      const again = await run(['diff'], doc);
      assert.equal(again.code, 0, again.err);
      assert.deepEqual(planLines(again), ['0 to add, 0 to change, 0 to delete']);
    });

    test('an invalid document changes nothing and names the object and key; usage errors exit 2', async () => {
      const before = await Promise.all(OBJECTS.map(etag));
      const newProfile = { name: 'decl-new', config: {}, devices: {} };
      const withBad = (bad: object) =>
        document(t, { memory: '96MiB', extra: [bad] }).replace(
          'profiles:\n',
          `profiles:\n  - ${JSON.stringify(newProfile)}\n`,
        );
      const cases: [object, RegExp][] = [
        [
          { name: 'decl-c4', source: { type: 'image', alias: 'nope' } },
          /container "decl-c4": key "source.alias": no image alias "nope"/,
        ],
        [
          { name: 'decl-c4', source: { type: 'image', alias: 'bb' }, imgae: 'x' },
          /container "decl-c4": unknown key "imgae"/,
        ],
        [
          { name: 'decl-c4', source: { type: 'image', alias: 'bb' }, profiles: ['decl-gone'] },
          /container "decl-c4": key "profiles": no profile "decl-gone"/,
        ],
        [
          {
            name: 'decl-c4',
            source: { type: 'image', alias: 'bb' },
            devices: { eth1: { type: 'nic', network: 'decl-nonet' } },
          },
          /container "decl-c4": device "eth1": key "network": no managed network "decl-nonet"/,
        ],
      ];
      if (svcd)
        cases.push([
          { name: 'decl-c4', source: { type: 'image', alias: 'bb' }, config: { 'limits.memory': 'lots' } },
          /container "decl-c4": Invalid value for instance config key "limits.memory"/,
        ]);
      for (const [bad, re] of cases) {
        const r = await run(['apply'], withBad(bad));
        assert.equal(r.code, 1, `${JSON.stringify(bad)}: ${r.out}${r.err}`);
        assert.match(r.err, re);
        assert.equal(r.out, '', 'no plan is printed for an invalid document');
      }
      assert.equal((await t.api.get('/1.0/profiles/decl-new')).status, 404);
      assert.equal((await t.api.get('/1.0/containers/decl-c4')).status, 404);
      assert.deepEqual(await Promise.all(OBJECTS.map(etag)), before);
      assert.equal((await run(['apply'])).code, 2);
      assert.equal((await run(['apply', '--frobnicate'], document(t))).code, 2);
      assert.equal((await cli(['apply', '-f', path.join(work, 'missing.yaml')])).code, 1);
      assert.equal((await cli(['diff', '-f', path.join(work, 'missing.yaml')])).code, 2, 'diff: an error is > 1');
    });

    test('--prune deletes what the document does not name, never the default profile or pool', async () => {
      const made = await t.api.post('/1.0/profiles', { name: 'decl-extra', config: {}, devices: {} });
      assert.ok(made.status < 300, made.text);
      const doc = document(t, { memory: '96MiB', c2: false, volume: false });
      const r = await run(['apply', '--prune'], doc);
      assert.equal(r.code, 0, r.err);
      assert.deepEqual(planLines(r), [
        '~ container decl-c1: devices.data',
        '- container decl-c2',
        '- profile decl-extra',
        '- storage volume default/decl-data',
        '0 to add, 1 to change, 3 to delete',
      ]);
      assert.equal((await t.api.get('/1.0/containers/decl-c2')).status, 404);
      assert.equal((await t.api.get('/1.0/profiles/decl-extra')).status, 404);
      assert.equal((await t.api.get('/1.0/storage-pools/default/volumes/custom/decl-data')).status, 404);
      assert.equal((await t.api.get('/1.0/profiles/default')).status, 200);
      assert.equal(await status('decl-c1'), 'Running');
      // From stdin, the same document: nothing left to do.
      const d = await cli(['diff', '-f', '-'], doc);
      assert.equal(d.code, 0, d.err);
    });

    test('over HTTPS with a client certificate, the server certificate pinned', async () => {
      const { url, cert } = await t.https();
      const client = await makeClientCertificate('decl-client');
      const trusted = await t.api.post('/1.0/certificates', {
        type: 'client',
        name: 'decl',
        certificate: pemBody(client.cert),
      });
      assert.ok(trusted.status < 300, trusted.text);
      const files = { cert: path.join(work, 'c.crt'), key: path.join(work, 'c.key'), server: path.join(work, 's.crt') };
      await writeFile(files.cert, client.cert);
      await writeFile(files.key, client.key, { mode: 0o600 });
      await writeFile(files.server, cert);
      const remote = [
        '--url',
        url,
        '--client-cert',
        files.cert,
        '--client-key',
        files.key,
        '--server-cert',
        files.server,
      ];
      const doc = document(t, { memory: '96MiB', c2: false, volume: false });
      const d = await run(['diff', ...remote], doc);
      assert.equal(d.code, 0, d.out + d.err);
      // Another server certificate: refused before anything is sent.
      await writeFile(files.server, (await makeClientCertificate('not-the-server')).cert);
      const wrong = await run(['diff', ...remote], doc);
      assert.equal(wrong.code, 2, wrong.out);
      assert.match(wrong.err, /cannot reach the server|certificate/);
      assert.ok((await readFile(files.key, 'utf8')).length > 0);
    });

    test('an empty document with --prune removes everything the document made', async () => {
      const r = await run(['apply', '--prune'], '{}\n');
      assert.equal(r.code, 0, r.err);
      assert.deepEqual(planLines(r), [
        '- container decl-c1',
        '- profile decl-web',
        `- network ${t.bridge}`,
        '0 to add, 0 to change, 3 to delete',
      ]);
      assert.equal((await t.api.get(`/1.0/networks/${t.bridge}`)).json.metadata?.managed ?? false, false);
    });
  });
}

applyCases('svcd (real LXC)', skip, () => svcdTarget({ bridge: 'declbr-s', salt: 11, image: true }), true);
applyCases(
  "Debian's LXD 5.0.2",
  lxdSkip,
  () => lxdTarget({ name: 'decl', bridge: 'declbr-l', salt: 12, image: true }),
  false,
);
