/**
 * GitOps with Debian's Ansible (community.general's lxd_profile and lxd_container, `url: unix:<socket>`):
 * a play creates a profile and a running container; a second play changes the container's config, the
 * profile and the container's devices, and the running container has them when the play ends (cgroup
 * files, its mount table), without a restart; a third run of the same play changes nothing. A container with a
 * nic on a managed network: Ansible waits for its IPv4 address (the static lease) and a rerun changes nothing.
 * The lxd inventory plugin (which speaks only /1.0/instances) lists the containers as hosts, grouped by the OS
 * of the image each was made from (its image.os key).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { buildBusyboxImage } from '../support/busybox-image.ts';
import { cgroupFile } from '../support/cgroup.ts';
import { teardownContainers, uploadBusybox, waitOp } from '../support/container-env.ts';
import { startDaemon, type Daemon } from '../support/daemon.ts';
import { client, type Client } from '../support/http.ts';
import { freeSubnet24, safeNetworkConfig } from '../support/networks.ts';
import { ensureRootSubids, lxcSkipReason } from '../support/lxc-host.ts';

const run = promisify(execFile);
const noAnsible = await run('ansible-playbook', ['--version']).then(
  () => undefined,
  () => 'ansible-playbook is not installed',
);
const skip = (await lxcSkipReason()) ?? noAnsible;
if (skip) console.log(`# skipping Ansible e2e tests: ${skip}`);

describe('Ansible lxd_profile and lxd_container drive running containers', { skip }, () => {
  const name = `ans${randomBytes(3).toString('hex')}`;
  let d: Daemon;
  let api: Client;
  let work = '';

  /** The play: a profile `web-<name>` and a started container using it, with the given config and devices. */
  const play = (o: { processes: string; memory: string; share: boolean }) =>
    JSON.stringify([
      {
        hosts: 'localhost',
        gather_facts: false,
        tasks: [
          {
            'community.general.lxd_profile': {
              url: `unix:${d.socketPath}`,
              name: `web-${name}`,
              state: 'present',
              config: { 'limits.processes': o.processes },
            },
          },
          {
            'community.general.lxd_container': {
              url: `unix:${d.socketPath}`,
              name,
              state: 'started',
              source: { type: 'image', alias: 'bb' },
              profiles: ['default', `web-${name}`],
              config: { 'limits.memory': o.memory },
              devices: {
                root: { type: 'disk', path: '/', pool: 'default' },
                ...(o.share
                  ? { share: { type: 'disk', source: path.join(work, 'share'), path: '/mnt/share', readonly: 'true' } }
                  : {}),
              },
              wait_for_ipv4_addresses: false,
            },
          },
        ],
      },
    ]);
  /** Run a play (JSON is YAML); returns the recap's `changed` count. */
  async function playbook(text: string): Promise<number> {
    const file = path.join(work, 'play.yml');
    await writeFile(file, text);
    const out = await run('ansible-playbook', ['-i', 'localhost,', '-c', 'local', file], {
      env: { ...process.env, ANSIBLE_NOCOLOR: '1', HOME: work },
      timeout: 180_000,
    }).catch((e: { stdout?: string; stderr?: string }) => {
      throw new Error(`ansible-playbook failed:\n${e.stdout}\n${e.stderr}`);
    });
    const m = /localhost\s+:\s+ok=\d+\s+changed=(\d+)\s+unreachable=0\s+failed=0/.exec(out.stdout);
    assert.ok(m, out.stdout);
    return Number(m[1]);
  }
  const pidOf = async () => (await api.get(`/1.0/containers/${name}/state`)).json.metadata.pid as number;
  async function mounted(pid: number, target: string): Promise<boolean | undefined> {
    const line = (await readFile(`/proc/${pid}/mountinfo`, 'utf8')).split('\n').find((l) => l.split(' ')[4] === target);
    return line === undefined ? undefined : line.split(' ')[5]!.split(',').includes('ro');
  }

  before(async () => {
    await ensureRootSubids();
    work = await mkdtemp(path.join(os.tmpdir(), 'svcd-ansible-'));
    await chmod(work, 0o711);
    await mkdir(path.join(work, 'share'), { mode: 0o755 });
    d = await startDaemon();
    api = client({ socketPath: d.socketPath });
    await uploadBusybox(api, work);
  });

  after(async () => {
    await teardownContainers(d, api, [work]);
  });

  test('create, change live, and a rerun that changes nothing', async () => {
    assert.ok((await playbook(play({ processes: '80', memory: '64MiB', share: true }))) > 0);
    const pid = await pidOf();
    assert.ok(pid > 0);
    assert.equal(await cgroupFile(pid, 'memory', 'memory.limit_in_bytes', 'memory.max'), String(64 * 1024 * 1024));
    assert.equal(await cgroupFile(pid, 'pids', 'pids.max', 'pids.max'), '80');
    assert.equal(await mounted(pid, '/mnt/share'), true);

    // The GitOps push: config, profile and devices change on the running container.
    assert.ok((await playbook(play({ processes: '90', memory: '128MiB', share: false }))) > 0);
    assert.equal(await pidOf(), pid, 'not restarted');
    assert.equal(await cgroupFile(pid, 'memory', 'memory.limit_in_bytes', 'memory.max'), String(128 * 1024 * 1024));
    assert.equal(await cgroupFile(pid, 'pids', 'pids.max', 'pids.max'), '90');
    assert.equal(await mounted(pid, '/mnt/share'), undefined);

    assert.equal(await playbook(play({ processes: '90', memory: '128MiB', share: false })), 0);
  });

  test('the lxd inventory plugin lists the containers through /1.0/instances, grouped by image OS', async () => {
    // A second image of another OS: the same busybox tree, another fingerprint, its properties edited.
    const img = await buildBusyboxImage({
      dir: path.join(work, 'other'),
      format: 'unified',
      compression: 'gzip',
      creationDate: 1,
    });
    if (img.format !== 'unified') throw new Error('unexpected image format');
    await waitOp(
      api,
      await api.post('/1.0/images', await readFile(img.file), { 'Content-Type': 'application/octet-stream' }),
    );
    const edited = await api.patch(`/1.0/images/${img.fingerprint}`, { properties: { os: 'Otheros', release: 'o1' } });
    assert.equal(edited.status, 200, edited.text);
    const bb = `${name}-bb`;
    const other = `${name}-ot`;
    await waitOp(api, await api.post('/1.0/instances', { name: bb, source: { type: 'image', alias: 'bb' } }));
    await waitOp(
      api,
      await api.post('/1.0/instances', { name: other, source: { type: 'image', fingerprint: img.fingerprint } }),
    );
    try {
      const inventory = path.join(work, 'svcd.lxd.yml');
      await writeFile(
        inventory,
        JSON.stringify({
          plugin: 'community.general.lxd',
          url: `unix:${d.socketPath}`,
          groupby: {
            osBusybox: { type: 'os', attribute: 'busybox' },
            osOther: { type: 'os', attribute: 'otheros' },
            typeContainer: { type: 'type', attribute: 'container' },
          },
        }),
      );
      const out = await run('ansible-inventory', ['-i', inventory, '--list'], {
        env: { ...process.env, ANSIBLE_NOCOLOR: '1', HOME: work, ANSIBLE_INVENTORY_UNPARSED_FAILED: '1' },
        timeout: 120_000,
      }).catch((e: { stdout?: string; stderr?: string }) => {
        throw new Error(`ansible-inventory failed:\n${e.stdout}\n${e.stderr}`);
      });
      const inv = JSON.parse(out.stdout) as Record<string, { hosts?: string[] }> & {
        _meta: { hostvars: Record<string, Record<string, unknown>> };
      };
      // Only this test's two containers (the other tests' may be listed too).
      const hosts = (g: string) => (inv[g]?.hosts ?? []).filter((h) => h === bb || h === other).sort();
      assert.deepEqual(hosts('osBusybox'), [bb], out.stdout);
      assert.deepEqual(hosts('osOther'), [other], out.stdout);
      assert.deepEqual(hosts('typeContainer'), [bb, other].sort(), out.stdout);
      assert.equal(inv._meta.hostvars[bb]?.ansible_lxd_os, 'busybox');
      assert.equal(inv._meta.hostvars[other]?.ansible_lxd_os, 'otheros');
      assert.equal(inv._meta.hostvars[other]?.ansible_lxd_release, 'o1');
      assert.equal(inv._meta.hostvars[bb]?.ansible_lxd_type, 'container');
      assert.equal(inv._meta.hostvars[bb]?.ansible_lxd_project, 'default');
    } finally {
      for (const ct of [bb, other]) await api.delete(`/1.0/instances/${ct}`).catch(() => {});
    }
  });

  test('a container with a nic on a managed network: wait_for_ipv4_addresses sees its static lease, a rerun changes nothing', async () => {
    const net = `tan${process.pid % 10000}`;
    const { cidr, prefix3 } = await freeSubnet24(7);
    assert.equal((await api.post('/1.0/networks', { name: net, config: safeNetworkConfig(cidr) })).status, 200);
    const ct = `${name}n`;
    const netPlay = JSON.stringify([
      {
        hosts: 'localhost',
        gather_facts: false,
        tasks: [
          {
            'community.general.lxd_container': {
              url: `unix:${d.socketPath}`,
              name: ct,
              state: 'started',
              source: { type: 'image', alias: 'bb' },
              profiles: ['default'],
              devices: {
                root: { type: 'disk', path: '/', pool: 'default' },
                eth0: { type: 'nic', network: net, 'ipv4.address': `${prefix3}.42` },
              },
              wait_for_ipv4_addresses: true,
              timeout: 60,
            },
          },
        ],
      },
    ]);
    try {
      assert.ok((await playbook(netPlay)) > 0);
      const state = (await api.get(`/1.0/containers/${ct}/state`)).json.metadata;
      assert.ok(
        state.network.eth0.addresses.some((a: { address: string }) => a.address === `${prefix3}.42`),
        JSON.stringify(state.network.eth0),
      );
      const leases = (await api.get(`/1.0/networks/${net}/leases`)).json.metadata as {
        hostname: string;
        address: string;
        type: string;
      }[];
      assert.ok(
        leases.some((l) => l.hostname === ct && l.address === `${prefix3}.42` && l.type === 'static'),
        JSON.stringify(leases),
      );
      assert.equal(await playbook(netPlay), 0, 'the volatile MAC svcd added is not a change');
    } finally {
      await api.put(`/1.0/containers/${ct}/state`, { action: 'stop', force: true }).catch(() => {});
      await api.delete(`/1.0/containers/${ct}`).catch(() => {});
      await api.delete(`/1.0/networks/${net}`).catch(() => {});
    }
  });
});
