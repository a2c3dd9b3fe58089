/**
 * The LXC host layer against real LXC: busybox containers in a private LXC path under /tmp, a private
 * test bridge (no addresses, no NAT: nothing is routed off the machine). `after` force-stops every
 * container, deletes the bridge, ends the lxc-monitord this suite caused and removes the temp tree,
 * also when a test failed.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readFile, readlink, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCommand } from '../../src/host/exec.ts';
import { computeIdmap } from '../../src/host/idmap/compute-idmap.ts';
import { parseSubids } from '../../src/host/idmap/parse-subids.ts';
import { runInContainer } from '../../src/host/lxc/attach.ts';
import { readCgroupStats } from '../../src/host/lxc/cgroup-stats.ts';
import { readLxcHostFeatures, type LxcHostFeatures } from '../../src/host/lxc/host-features.ts';
import { readHostState } from '../../src/host/lxc/host-state.ts';
import { readHostStates } from '../../src/host/lxc/host-states.ts';
import {
  ContainerStartError,
  containerState,
  freezeContainer,
  lxcInfo,
  startContainer,
  stopContainer,
  unfreezeContainer,
} from '../../src/host/lxc/lifecycle.ts';
import type { LxcRef } from '../../src/host/lxc/lxc-args.ts';
import { watchStates, type LxcMonitorEvent } from '../../src/host/lxc/monitor.ts';
import { readHostInterface, readNetworkStats } from '../../src/host/lxc/network-stats.ts';
import { cgroupFile } from '../support/cgroup.ts';
import { removeLeftovers } from '../../src/host/lxc/remove-leftovers.ts';
import { renderLxcConfig } from '../../src/host/lxc/render-config.ts';
import { renderSeccompPolicy, seccompConfigFromKeys } from '../../src/host/lxc/render-seccomp-policy.ts';
import type { LxcSpec } from '../../src/host/lxc/types.ts';
import { readMounts } from '../../src/host/storage/mountinfo.ts';
import { buildBusyboxRootfs } from '../support/busybox-image.ts';
import { eventually } from '../support/http.ts';
import { ensureRootSubids, findProcesses, hasSocket, lxcSkipReason, monitordFor } from '../support/lxc-host.ts';

const MiB = 1024 * 1024;
const skip = await lxcSkipReason();
if (skip) console.log(`# skipping LXC lifecycle host tests: ${skip}`);

/** The container's file for a cgroup controller (`memory.limit_in_bytes` under v1 memory, `memory.max` under v2). */
describe('LXC lifecycle on the real host', { skip }, () => {
  const id = randomBytes(3).toString('hex');
  const bridge = `svcdtst${id}`;
  const started: string[] = [];
  const events: LxcMonitorEvent[] = [];
  const watch = new AbortController();
  let watching: Promise<void> | undefined;
  let root = '';
  let features: LxcHostFeatures;

  const sawState = (name: string, state: string) =>
    events.some((e) => e.type === 'state' && e.name === name && e.state === state);

  before(async () => {
    root = await mkdtemp('/tmp/svcd-lxc-it-');
    // an unprivileged container's root must be able to traverse to its rootfs
    await chmod(root, 0o711);
    await ensureRootSubids();
    features = await readLxcHostFeatures();
    await runCommand('ip', ['link', 'add', bridge, 'type', 'bridge']);
    await runCommand('ip', ['link', 'set', bridge, 'up']);
    watching = watchStates({ lxcPath: root, signal: watch.signal, onEvent: (e) => events.push(e) });
    watching.catch(() => undefined);
    // lxc-monitor connects to lxc-monitord asynchronously and nothing is replayed: wait for the socket
    await eventually(async () => {
      const [mon] = await findProcesses((a) => path.basename(a[0] ?? '') === 'lxc-monitor' && a.includes(root));
      return mon && (await hasSocket(mon.pid));
    }, 'lxc-monitor to connect to lxc-monitord');
  });

  after(async () => {
    for (const name of started) {
      await stopContainer({ name, lxcPath: root, force: true, timeoutMs: 10_000 }).catch(() => undefined);
      await eventually(
        async () => (await removeLeftovers({ name })).busy.length === 0,
        `no cgroups left for ${name}`,
      ).catch(() => undefined);
    }
    watch.abort();
    await watching?.catch(() => undefined);
    await runCommand('ip', ['link', 'del', bridge]).catch(() => undefined);
    if (root) {
      for (const p of await monitordFor(root)) {
        try {
          process.kill(p.pid, 'SIGTERM');
        } catch {
          // already gone
        }
      }
      if (root.startsWith('/tmp/svcd-lxc-it-')) await rm(root, { recursive: true, force: true });
    }
  });

  /** Rootfs + rendered config for one container under the suite's LXC path. */
  async function prepare(name: string, spec: Partial<LxcSpec> & Pick<LxcSpec, 'privileged'>) {
    const dir = path.join(root, name);
    await mkdir(dir, { mode: 0o711 });
    const rootfsPath = path.join(dir, 'rootfs');
    await buildBusyboxRootfs({ dir: rootfsPath, hostname: name });
    const logFile = path.join(dir, 'lxc.log');
    const full: LxcSpec = {
      hostname: name,
      rootfsPath,
      cgroupVersion: features.cgroupVersion,
      apparmorEnabled: features.apparmorEnabled,
      haltSignal: 'SIGUSR2',
      logFile,
      logLevel: 'DEBUG',
      consoleLogFile: path.join(dir, 'console.log'),
      ...spec,
    };
    const configFile = path.join(dir, 'config');
    await writeFile(configFile, renderLxcConfig(full));
    started.push(name);
    const ref: LxcRef = { name, lxcPath: root };
    return { ref, configFile, logFile, rootfsPath, dir };
  }

  it('privileged: starts, runs commands, mounts a disk and a device, stops cleanly on the halt signal', async () => {
    const name = `svcd-it-${id}-p`;
    const data = path.join(root, 'data');
    await mkdir(data);
    await writeFile(path.join(data, 'hello'), 'hi\n');
    const c = await prepare(name, {
      privileged: true,
      disks: [
        { source: data, target: '/mnt/data', kind: 'dir', readonly: true },
        // a device node bound as a plain file, without a device-cgroup rule: visible but not openable
        { source: '/dev/loop-control', target: '/dev/loop-control', kind: 'file' },
      ],
      unixDevices: [{ type: 'char', source: '/dev/net/tun', target: '/dev/net/tun', major: 10, minor: 200 }],
    });
    const s = await startContainer({ ...c.ref, configFile: c.configFile, logFile: c.logFile });
    assert.equal(s.state, 'RUNNING');
    assert.ok(s.pid > 1);
    assert.deepEqual(await containerState(c.ref), { state: 'RUNNING', pid: s.pid });
    // the spawn-free reading answers, and agrees with lxc-info
    assert.deepEqual(await readHostState(c.ref), { state: 'RUNNING', pid: s.pid });
    assert.deepEqual(await lxcInfo(c.ref), { state: 'RUNNING', pid: s.pid });
    // the observer's listing of every container, without lxc-ls (nor lxc-info: the records settle it)
    const noInfo = { lxcInfo: async () => assert.fail('lxc-info asked') };
    assert.deepEqual(
      (await readHostStates(c.ref.lxcPath, noInfo)).find((l) => l.name === name),
      { name, state: 'RUNNING', pid: s.pid },
    );
    assert.deepEqual(
      await startContainer({ ...c.ref, configFile: c.configFile, logFile: c.logFile }),
      s,
      'starting a running container is success',
    );

    const run = (...command: string[]) => runInContainer({ ...c.ref, command });
    assert.match(await run('/bin/busybox', 'id'), /^uid=0\(root\) gid=0\(root\)/);
    assert.equal(await run('/bin/hostname'), name);
    assert.equal((await readFile(`/proc/${s.pid}/uid_map`, 'utf8')).trim().split(/\s+/).join(' '), '0 0 4294967295');
    assert.equal(await run('/bin/cat', '/mnt/data/hello'), 'hi');
    await assert.rejects(run('/bin/touch', '/mnt/data/new'), /Read-only file system/);
    // the device cgroup allows 10:200 only because of the rendered rule
    await run('/bin/dd', 'if=/dev/net/tun', 'of=/dev/null', 'count=0');
    assert.equal(await run('/bin/stat', '-c', '%t:%T', '/dev/loop-control'), 'a:ed');
    await assert.rejects(run('/bin/dd', 'if=/dev/loop-control', 'of=/dev/null', 'count=0'), /Operation not permitted/);

    const t0 = Date.now();
    assert.deepEqual(await stopContainer({ ...c.ref, timeoutMs: 20_000 }), { forced: false });
    const took = Date.now() - t0;
    assert.ok(took < 10_000, `clean stop took ${took} ms`);
    assert.deepEqual(await containerState(c.ref), { state: 'STOPPED' });
    assert.deepEqual(await readHostState(c.ref), { state: 'STOPPED' });
    assert.deepEqual(await lxcInfo(c.ref), { state: 'STOPPED' });
    assert.deepEqual(
      (await readHostStates(c.ref.lxcPath, noInfo)).find((l) => l.name === name),
      { name, state: 'STOPPED' },
    );
    assert.match(await readFile(path.join(c.dir, 'console.log'), 'utf8'), /The system is going down NOW!/);
    assert.deepEqual(await stopContainer({ ...c.ref }), { forced: false }, 'stopping a stopped container is success');

    await eventually(() => sawState(name, 'STOPPED'), `a STOPPED event for ${name}`);
    assert.ok(sawState(name, 'STARTING') && sawState(name, 'RUNNING'), JSON.stringify(events));
  });

  it('unprivileged with an idmapped rootfs: mapping, limits, seccomp, NIC, stats, freeze, force stop while frozen', async () => {
    const name = `svcd-it-${id}-u`;
    const subuid = parseSubids(await readFile('/etc/subuid', 'utf8'), 'root', 0);
    const subgid = parseSubids(await readFile('/etc/subgid', 'utf8'), 'root', 0);
    const idmap = computeIdmap({ subuid, subgid, privileged: false });
    const seccompProfile = path.join(root, `${name}.seccomp`);
    await writeFile(seccompProfile, renderSeccompPolicy(seccompConfigFromKeys({}))!);
    const hostName = `svcdv${id}`;
    const hwaddr = `02:5c:${id.slice(0, 2)}:${id.slice(2, 4)}:${id.slice(4, 6)}:01`;
    const c = await prepare(name, {
      privileged: false,
      idmap,
      idmappedRootfs: true,
      limits: { memoryBytes: 128 * MiB, swap: false, swapAccounting: features.swapAccounting, processes: 64 },
      prlimits: { nofile: '1024:2048' },
      environment: { SVCD_TEST: 'hello world' },
      seccompProfile,
      nics: [{ name: 'eth1', parent: bridge, hwaddr, mtu: 1400, hostName }],
    });
    const { pid } = await startContainer({ ...c.ref, configFile: c.configFile, logFile: c.logFile });
    const run = (...command: string[]) => runInContainer({ ...c.ref, command });

    // user namespace: the computed map, files owned by root inside and (unshifted) on the host
    const uidMap = (await readFile(`/proc/${pid}/uid_map`, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => l.trim().split(/\s+/).map(Number));
    assert.deepEqual(
      uidMap,
      idmap.uid.map((r) => [r.nsid, r.hostid, r.count]),
    );
    assert.deepEqual(uidMap, [[0, idmap.uid[0]!.hostid, 65536]]);
    assert.equal(await run('/bin/stat', '-c', '%u:%g', '/bin/busybox'), '0:0');
    assert.equal((await stat(path.join(c.rootfsPath, 'bin/busybox'))).uid, 0);
    assert.equal(await run('/bin/id', '-u'), '0');
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    assert.equal(/^Uid:\s+(\d+)/m.exec(status)?.[1], String(idmap.uid[0]!.hostid), 'init runs as the mapped host uid');
    assert.equal(/^Seccomp:\s+(\d+)/m.exec(status)?.[1], '2', 'seccomp filter mode');

    // limits, kernel limits and environment
    assert.equal(await cgroupFile(pid, 'memory', 'memory.limit_in_bytes', 'memory.max'), String(128 * MiB));
    assert.equal(await cgroupFile(pid, 'pids', 'pids.max', 'pids.max'), '64');
    if (features.cgroupVersion === 1 && features.swapAccounting) {
      assert.equal(
        await cgroupFile(pid, 'memory', 'memory.memsw.limit_in_bytes', 'memory.swap.max'),
        String(128 * MiB),
      );
    }
    assert.match(await readFile(`/proc/${pid}/limits`, 'utf8'), /^Max open files\s+1024\s+2048\s+files/m);
    assert.ok((await readFile(`/proc/${pid}/environ`, 'utf8')).split('\0').includes('SVCD_TEST=hello world'));

    // the NIC: requested name and MAC inside, host side on the bridge
    assert.equal(await run('/bin/cat', '/sys/class/net/eth1/address'), hwaddr);
    const net = await readNetworkStats(pid);
    assert.deepEqual(Object.keys(net).sort(), ['eth1', 'lo']);
    assert.equal(net.eth1!.hwaddr, hwaddr);
    assert.equal(net.eth1!.mtu, 1400);
    assert.equal(net.eth1!.state, 'up');
    assert.equal(net.eth1!.type, 'broadcast');
    assert.equal(net.eth1!.hostName, hostName);
    assert.ok(
      net.eth1!.addresses.some((a) => a.family === 'inet6' && a.scope === 'link'),
      JSON.stringify(net.eth1!.addresses),
    );
    assert.equal(net.lo!.type, 'loopback');
    assert.equal(typeof net.eth1!.counters.bytesReceived, 'number');
    assert.deepEqual(await readHostInterface(hostName), {
      hwaddr: (await readFile(`/sys/class/net/${hostName}/address`, 'utf8')).trim(),
      mtu: 1400,
      state: 'up',
      type: 'broadcast',
    });
    assert.equal(path.basename(await readlink(`/sys/class/net/${hostName}/master`)), bridge);
    assert.equal(await readHostInterface('svcd-no-such-if'), undefined);

    // cgroup counters
    const st = await readCgroupStats({ pid });
    assert.ok((st.memoryUsage ?? 0) > 0, JSON.stringify(st));
    assert.ok((st.cpuUsageNs ?? 0) > 0, JSON.stringify(st));
    assert.ok((st.processes ?? 0) >= 1, JSON.stringify(st));
    assert.ok((st.memoryPeak ?? 0) >= (st.memoryUsage ?? 0) || st.memoryPeak === undefined, JSON.stringify(st));

    // freeze and thaw
    await freezeContainer(c.ref);
    assert.deepEqual(await containerState(c.ref), { state: 'FROZEN', pid });
    assert.deepEqual(await readHostState(c.ref), { state: 'FROZEN', pid });
    assert.deepEqual(await lxcInfo(c.ref), { state: 'FROZEN', pid });
    assert.deepEqual(
      (await readHostStates(c.ref.lxcPath, { lxcInfo })).find((l) => l.name === name),
      { name, state: 'FROZEN', pid },
    );
    await unfreezeContainer(c.ref);
    assert.deepEqual(await containerState(c.ref), { state: 'RUNNING', pid });
    assert.deepEqual(await readHostState(c.ref), { state: 'RUNNING', pid });
    await eventually(
      () => sawState(name, 'FROZEN') && sawState(name, 'THAWED'),
      `FROZEN and THAWED events for ${name}`,
    );

    // force stop, from FROZEN
    await freezeContainer(c.ref);
    const t0 = Date.now();
    assert.deepEqual(await stopContainer({ ...c.ref, force: true }), { forced: true });
    assert.ok(Date.now() - t0 < 5_000, `force stop took ${Date.now() - t0} ms`);
    assert.deepEqual(await containerState(c.ref), { state: 'STOPPED' });
    await assert.rejects(readCgroupStats({ pid }), /ENOENT|ESRCH/);
    await eventually(() => sawState(name, 'STOPPED'), `a STOPPED event for ${name}`);
  });

  it('a clean stop that init ignores falls back to a kill after the timeout', async () => {
    // busybox init reloads its inittab on SIGHUP and keeps running
    const c = await prepare(`svcd-it-${id}-h`, { privileged: true, haltSignal: 'SIGHUP' });
    await startContainer({ ...c.ref, configFile: c.configFile, logFile: c.logFile });
    const t0 = Date.now();
    assert.deepEqual(await stopContainer({ ...c.ref, timeoutMs: 1_000 }), { forced: true });
    assert.ok(Date.now() - t0 < 8_000, `stop took ${Date.now() - t0} ms`);
    assert.deepEqual(await containerState(c.ref), { state: 'STOPPED' });
  });

  it('a failed start reports the LXC log of that attempt', async () => {
    const name = `svcd-it-${id}-f`;
    const c = await prepare(name, { privileged: true });
    await rm(c.rootfsPath, { recursive: true });
    const err = await startContainer({ ...c.ref, configFile: c.configFile, logFile: c.logFile }).then(
      () => assert.fail('start should fail without a rootfs'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof ContainerStartError, String(err));
    assert.match(err.message, new RegExp(`container ${name} failed to start`));
    assert.ok(err.logTail.split('\n').length > 1, err.logTail);
    assert.match(err.logTail, /ERROR/);
    if (process.env.SVCD_TEST_VERBOSE) console.log(err.message);
    assert.deepEqual(await containerState(c.ref), { state: 'STOPPED' });
    // LXC leaves the failed attempt's monitor cgroups behind (its monitor was still inside them)
    await eventually(async () => (await removeLeftovers({ name })).busy.length === 0, `removable cgroups of ${name}`);
    const left = (await readMounts()).filter((m) => m.fsType.startsWith('cgroup'));
    for (const m of left) {
      for (const kind of ['lxc.monitor', 'lxc.payload']) {
        await assert.rejects(
          stat(path.join(m.mountPoint, `${kind}.${name}`)),
          /ENOENT/,
          `${m.mountPoint}/${kind}.${name}`,
        );
      }
    }
  });
});
