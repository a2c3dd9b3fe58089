import assert from 'node:assert/strict';
import { createHash, X509Certificate } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { makeClientCertificate } from '../support/certs.ts';
import { teardownContainers, uploadBusybox, waitOp } from '../support/container-env.ts';
import { startDaemon, type Daemon } from '../support/daemon.ts';
import { client, expectError, freePort, type Client } from '../support/http.ts';
import { lxcCli, type LxcCli } from '../support/lxc-cli.ts';
import { ensureRootSubids } from '../support/lxc-host.ts';
import { checkSpecFields, type SpecObject } from '../support/spec-fields.ts';

/** Assert that `value` has every field the spec names for `kind`, each with the spec's JSON type. */
function conforms(kind: SpecObject, value: unknown): void {
  const problems = checkSpecFields(kind, value);
  assert.deepEqual(
    problems,
    [],
    `${kind} does not match the spec:\n${problems.join('\n')}\n${JSON.stringify(value, null, 1).slice(0, 2000)}`,
  );
}

/** What GET /1.0 must announce: exactly the extensions that work (reasons in src/api/extensions.ts). */
const EXPECTED_EXTENSIONS = [
  'container_host_shutdown_timeout',
  'container_stop_priority',
  'container_syscall_filtering',
  'auth_pki',
  'container_last_used_at',
  'etag',
  'patch',
  'usb_devices',
  'https_allowed_credentials',
  'image_compression_algorithm',
  'directory_manipulation',
  'container_cpu_time',
  'profile_usedby',
  'container_push',
  'container_exec_recording',
  'certificate_update',
  'container_exec_signal_handling',
  'gpu_devices',
  'gpu_runtime',
  'gpu_runtime_config',
  'infiniband',
  'network',
  'container_image_properties',
  'migration_progress',
  'id_map',
  'network_firewall_filtering',
  'network_routes',
  'storage',
  'file_delete',
  'file_append',
  'network_dhcp_expiry',
  'image_create_aliases',
  'container_stateless_copy',
  'container_only_migration',
  'unix_device_rename',
  'storage_rsync_bwlimit',
  'network_vxlan_interface',
  'storage_btrfs_mount_options',
  'entity_description',
  'image_force_refresh',
  'id_map_base',
  'file_symlinks',
  'container_push_target',
  'storage_images_delete',
  'container_edit_metadata',
  'instance_types',
  'storage_volatile_initial_source',
  'resources',
  'kernel_limits',
  'storage_api_volume_rename',
  'console',
  'restrict_devsvc',
  'devsvc_events',
  'proxy',
  'network_dhcp_gateway',
  'file_get_symlink',
  'network_leases',
  'unix_device_hotplug',
  'storage_api_local_volume_handling',
  'operation_description',
  'clustering',
  'clustering_join',
  'event_lifecycle',
  'storage_api_remote_volume_handling',
  'container_mount_propagation',
  'container_backup',
  'devsvc_images',
  'container_local_cross_pool_handling',
  'proxy_unix',
  'proxy_udp',
  'proxy_tcp_udp_multi_port_handling',
  'network_state',
  'proxy_unix_dac_properties',
  'container_protection_delete',
  'proxy_priv_drop',
  'pprof_http',
  'proxy_haproxy_protocol',
  'network_hwaddr',
  'proxy_nat',
  'network_nat_order',
  'container_full',
  'backup_compression',
  'storage_api_volume_snapshots',
  'storage_unmapped',
  'projects',
  'network_vxlan_ttl',
  'api_filtering',
  'instances',
];

test('the spec-field checker itself reports missing fields, wrong types and bad timestamps', () => {
  assert.deepEqual(checkSpecFields('imageAlias', { name: 'a', description: '', target: 'f' }), []);
  const problems = checkSpecFields('backup', {
    name: 'b',
    creation_date: '2024-01-02 03:04:05',
    expiry_date: 5,
    container_only: 'no',
  });
  assert.deepEqual(problems, [
    'backup.creation_date: expected an RFC 3339 timestamp, got "2024-01-02 03:04:05"',
    'backup.expiry_date: expected an RFC 3339 timestamp, got number 5',
    'backup.container_only: expected a boolean, got "no"',
    'backup.optimized_storage: missing',
  ]);
  const state = checkSpecFields('containerState', {
    status: 'Running',
    status_code: 103,
    cpu: { usage: 1 },
    disk: {},
    memory: { usage: 1, usage_peak: 1, swap_usage: 0, swap_usage_peak: 0 },
    pid: 1,
    processes: 1.5,
    network: {
      lo: {
        addresses: [],
        counters: { bytesReceived: 1 },
        hwaddr: '',
        host_name: '',
        mtu: 65536,
        state: 'up',
        type: 'loopback',
      },
    },
  });
  assert.ok(state.includes('containerState.network.lo.counters.bytes_received: missing'), state.join('\n'));
  assert.ok(state.includes('containerState.processes: expected an integer, got number 1.5'), state.join('\n'));
  assert.ok(
    checkSpecFields('profile', {
      name: 'p',
      description: '',
      config: { a: 1 },
      devices: { r: { path: '/' } },
      used_by: ['x'],
    }).length === 3,
  );
});

describe('every object the API renders has the spec field names and types (real daemon, real containers)', () => {
  let d: Daemon;
  let api: Client;
  let cli: LxcCli;
  let work: string;
  let port: number;
  let fingerprint: string;
  let createOp: Record<string, unknown>;
  let untrustedCert: { cert: string; key: string };
  const suffix = process.pid.toString(36);
  const ct = `sf-${suffix}`;
  const overHttps = (cert?: { cert: string; key: string }) =>
    client({ https: { host: '127.0.0.1', port, ...(cert ?? {}) } });

  before(async () => {
    await ensureRootSubids();
    work = await mkdtemp(path.join(os.tmpdir(), 'svcd-sf-'));
    d = await startDaemon({ env: { SVCD_LOG_LEVEL: 'info', SVCD_NODE_NAME: `member-${suffix}` } });
    api = client({ socketPath: d.socketPath });
    cli = await lxcCli(d.stateDir);
    port = await freePort();
    untrustedCert = await makeClientCertificate('sf-untrusted');
    assert.equal((await api.patch('/1.0', { config: { 'core.https_address': `127.0.0.1:${port}` } })).status, 200);
    ({ fingerprint } = await uploadBusybox(api, work));
    createOp = await waitOp(
      api,
      await api.post('/1.0/containers', {
        name: ct,
        description: 'spec fields',
        source: { type: 'image', alias: 'bb' },
      }),
    );
    await waitOp(api, await api.put(`/1.0/containers/${ct}/state`, { action: 'start' }));
    await waitOp(api, await api.post(`/1.0/containers/${ct}/snapshots`, { name: 'snap0' }));
    await waitOp(api, await api.post(`/1.0/containers/${ct}/backups`, { name: 'bk0', expiry: 3600 }));
  });
  after(async () => {
    await cli?.cleanup();
    await teardownContainers(d, api, [work]);
  });

  test('server description: guest and untrusted (HTTPS) and trusted; api_extensions is exactly the list of what works', async () => {
    const guest = (await overHttps().get('/1.0')).json.metadata;
    assert.equal(guest.auth, 'guest');
    conforms('serverGuest', guest);
    const untrusted = (await overHttps(untrustedCert).get('/1.0')).json.metadata;
    assert.equal(untrusted.auth, 'untrusted');
    conforms('serverGuest', untrusted);
    const trusted = (await api.get('/1.0')).json.metadata;
    assert.equal(trusted.auth, 'trusted');
    conforms('serverTrusted', trusted);
    assert.deepEqual(trusted.api_extensions, EXPECTED_EXTENSIONS);
    assert.deepEqual(guest.api_extensions, EXPECTED_EXTENSIONS);
  });

  test('operations: a task (container create) and an exec, as returned and as read again', async () => {
    conforms('operation', createOp);
    conforms('operation', (await api.get(`/1.0/operations/${createOp.id}`)).json.metadata);
    const exec = await waitOp(
      api,
      await api.post(`/1.0/containers/${ct}/exec`, {
        command: ['/bin/true'],
        'wait-for-websocket': false,
        interactive: false,
      }),
    );
    conforms('operation', exec);
    assert.equal(exec.metadata.return, 0);
  });

  test('certificate', async () => {
    const cert = await makeClientCertificate('sf-cert');
    assert.equal(
      (await api.post('/1.0/certificates', { type: 'client', certificate: cert.cert, name: 'sf' })).status,
      200,
    );
    const fp = createHash('sha256').update(new X509Certificate(cert.cert).raw).digest('hex');
    const got = (await api.get(`/1.0/certificates/${fp}`)).json.metadata;
    conforms('certificate', got);
    assert.equal(got.fingerprint, fp);
    for (const c of (await api.get('/1.0/certificates?recursion=1')).json.metadata) conforms('certificate', c);
  });

  test('container, its runtime state (spec counter names), snapshot, metadata and backup', async () => {
    const c = (await api.get(`/1.0/containers/${ct}`)).json.metadata;
    conforms('container', c);
    assert.equal(c.status, 'Running');
    assert.equal(c.description, 'spec fields');
    assert.notEqual(c.last_used_at, '1970-01-01T00:00:00Z', 'started, so last_used_at is set');

    // busybox init leaves lo down: bring it up (the kernel gives it 127.0.0.1) and send it one ping.
    const ping = await waitOp(
      api,
      await api.post(`/1.0/containers/${ct}/exec`, {
        command: ['/bin/sh', '-c', 'ip link set lo up && ping -c 1 -W 2 127.0.0.1'],
        'wait-for-websocket': false,
      }),
    );
    assert.equal(ping.metadata.return, 0, 'lo up and pinged');
    const st = (await api.get(`/1.0/containers/${ct}/state`)).json.metadata;
    conforms('containerState', st);
    assert.ok(st.pid > 0 && st.processes >= 1, JSON.stringify(st));
    assert.ok(st.network.lo, `the container's loopback interface is listed: ${JSON.stringify(st.network)}`);
    assert.ok(
      st.network.lo.addresses.some(
        (a: { family: string; address: string }) => a.family === 'inet' && a.address === '127.0.0.1',
      ),
      JSON.stringify(st.network.lo),
    );
    assert.ok(
      st.network.lo.counters.packets_received >= 1 && st.network.lo.counters.bytes_sent > 0,
      JSON.stringify(st.network.lo.counters),
    );
    assert.equal(st.network.lo.counters.bytesReceived, undefined, 'no camelCase counters');

    const snap = (await api.get(`/1.0/containers/${ct}/snapshots/snap0`)).json.metadata;
    conforms('containerSnapshot', snap);
    assert.deepEqual(
      snap.expanded_devices,
      c.expanded_devices,
      'expanded with its profiles: the root disk comes from the default profile',
    );
    assert.equal(snap.devices.root, undefined);
    for (const s of (await api.get(`/1.0/containers/${ct}/snapshots?recursion=1`)).json.metadata)
      conforms('containerSnapshot', s);
    conforms('containerMetadata', (await api.get(`/1.0/containers/${ct}/metadata`)).json.metadata);

    const b = (await api.get(`/1.0/containers/${ct}/backups/bk0`)).json.metadata;
    conforms('backup', b);
    assert.equal(b.creation_date, b.created_at);
    assert.ok(Date.parse(b.expiry_date) > Date.now() + 3500_000, b.expiry_date);
    assert.equal(b.expiry_date, b.expires_at);
    assert.equal(b.container_only, false);
    assert.equal(b.instance_only, false, 'LXD 5 names kept for the lxc CLI');
    for (const x of (await api.get(`/1.0/containers/${ct}/backups?recursion=1`)).json.metadata) conforms('backup', x);
  });

  test('recursion=2 (container_full): state, snapshots and backups with the spec fields', async () => {
    const list = (await api.get('/1.0/containers?recursion=2')).json.metadata;
    assert.equal(list.length, 1);
    conforms('containerFull', list[0]);
    assert.deepEqual(
      list[0].snapshots.map((s: { name: string }) => s.name),
      ['snap0'],
    );
    assert.equal(list[0].snapshots[0].expanded_devices.root?.type, 'disk');
    assert.deepEqual(
      list[0].backups.map((s: { name: string }) => s.name),
      ['bk0'],
    );
    for (const c of (await api.get('/1.0/containers?recursion=1')).json.metadata) conforms('container', c);
  });

  test('the lxc CLI reads the counters (lxc list through recursion=2, lxc info) and the backup fields', async () => {
    const listed = JSON.parse(await cli.ok(['list', ct, '--format', 'json']));
    assert.ok(listed[0].state.network.lo.counters.bytes_received > 0, JSON.stringify(listed[0].state.network.lo));
    assert.deepEqual(
      listed[0].backups.map((b: { name: string }) => b.name),
      ['bk0'],
    );
    const info = await cli.ok(['info', ct]);
    assert.match(info, /Bytes received: [1-9]/, info);
    assert.match(info, /Backups:[\s\S]*bk0/, info);
  });

  test('image and alias', async () => {
    conforms('image', (await api.get(`/1.0/images/${fingerprint}`)).json.metadata);
    for (const i of (await api.get('/1.0/images?recursion=1')).json.metadata) conforms('image', i);
    conforms('imageAlias', (await api.get('/1.0/images/aliases/bb')).json.metadata);
    for (const a of (await api.get('/1.0/images/aliases?recursion=1')).json.metadata) conforms('imageAlias', a);
  });

  test('profile, project, storage pool and its resources, custom volume and volume snapshot', async () => {
    conforms('profile', (await api.get('/1.0/profiles/default')).json.metadata);
    assert.equal(
      (
        await api.post('/1.0/projects', {
          name: `sfp-${suffix}`,
          description: 'p',
          config: { 'features.images': 'false' },
        })
      ).status,
      200,
    );
    conforms('project', (await api.get(`/1.0/projects/sfp-${suffix}`)).json.metadata);
    for (const p of (await api.get('/1.0/projects?recursion=1')).json.metadata) conforms('project', p);
    conforms('storagePool', (await api.get('/1.0/storage-pools/default')).json.metadata);
    conforms('storagePoolResources', (await api.get('/1.0/storage-pools/default/resources')).json.metadata);
    assert.equal(
      (await api.post('/1.0/storage-pools/default/volumes/custom', { name: `sfv-${suffix}`, config: {} })).status,
      200,
    );
    const vol = `/1.0/storage-pools/default/volumes/custom/sfv-${suffix}`;
    conforms('storageVolume', (await api.get(vol)).json.metadata);
    for (const v of (await api.get('/1.0/storage-pools/default/volumes?recursion=1')).json.metadata)
      conforms('storageVolume', v);
    await waitOp(api, await api.post(`${vol}/snapshots`, { name: 'vs0' }));
    conforms('volumeSnapshot', (await api.get(`${vol}/snapshots/vs0`)).json.metadata);
  });

  test('server resources', async () => {
    conforms('resources', (await api.get('/1.0/resources')).json.metadata);
  });

  test('GET /1.0/cluster on a standalone server: trusted and untrusted (HTTPS) callers get the cluster object', async () => {
    const want = { server_name: `member-${suffix}`, enabled: false, member_config: [] };
    const trusted = await api.get('/1.0/cluster');
    assert.equal(trusted.status, 200, trusted.text);
    conforms('cluster', trusted.json.metadata);
    assert.deepEqual(trusted.json.metadata, want);
    const untrusted = await overHttps(untrustedCert).get('/1.0/cluster');
    assert.equal(untrusted.status, 200, untrusted.text);
    assert.deepEqual(untrusted.json.metadata, want);
    // The spec admits trusted and untrusted callers; a caller without any certificate is a guest.
    expectError(await overHttps().get('/1.0/cluster'), 403);
  });

  test('PUT /1.0/cluster on a standalone server: {enabled: false} is a no-op; bad bootstrap and join input is refused', async () => {
    const noop = await api.put('/1.0/cluster', { enabled: false });
    assert.equal(noop.status, 200, noop.text);
    assert.equal(noop.json.type, 'sync');
    assert.equal((await api.put('/1.0/cluster', { server_name: `member-${suffix}`, enabled: false })).status, 200);
    assert.match(
      expectError(await api.put('/1.0/cluster', { server_name: 'other', enabled: true }), 400),
      /server_name/,
    );
    assert.match(
      expectError(await api.put('/1.0/cluster', { server_name: 'renamed', enabled: false }), 400),
      /name stays/,
    );
    // A join needs the cluster's certificate (nothing is contacted without it).
    assert.match(
      expectError(
        await api.put('/1.0/cluster', {
          server_name: `member-${suffix}`,
          server_address: '127.0.0.1:8443',
          enabled: true,
          cluster_address: '127.0.0.1:1',
          cluster_password: 'x',
        }),
        400,
      ),
      /cluster_certificate/,
    );
    assert.match(
      expectError(await api.put('/1.0/cluster', { enabled: false, cluster_address: '10.0.0.1:8443' }), 400),
      /cluster_address/,
    );
    assert.match(expectError(await api.put('/1.0/cluster', { enabled: 'yes' }), 400), /enabled/);
    expectError(await overHttps(untrustedCert).put('/1.0/cluster', { enabled: false }), 403);
    // Nothing changed.
    assert.deepEqual((await api.get('/1.0/cluster')).json.metadata, {
      server_name: `member-${suffix}`,
      enabled: false,
      member_config: [],
    });
    assert.equal((await api.get('/1.0')).json.metadata.environment.server_clustered, false);
  });
});
