import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { uploadBusybox, waitOp } from '../support/container-env.ts';
import { repoRoot, startDaemon, type Daemon } from '../support/daemon.ts';
import { cleanupHostUnder } from '../support/host-cleanup.ts';
import { client, eventually, type Client } from '../support/http.ts';
import { ensureRootSubids, monitordFor } from '../support/lxc-host.ts';
import { listenNotify, type NotifyListener } from '../support/notify-listener.ts';
import { parseServiceUnit, type ServiceUnit } from '../support/systemd-unit.ts';

const run = promisify(execFile);

/** Run a command, never rejecting: its exit code and output. */
async function runCode(
  file: string,
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run(file, args, { env, timeout: 120_000 });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, stdout: err.stdout, stderr: err.stderr };
  }
}

/** Every process below `pid` (from /proc/<n>/stat's ppid), with its argv. */
async function descendants(pid: number): Promise<{ pid: number; argv: string[] }[]> {
  const parent = new Map<number, number>();
  for (const e of await readdir('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    const stat = await readFile(`/proc/${e}/stat`, 'utf8').catch(() => '');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (stat) parent.set(Number(e), ppid);
  }
  const out: { pid: number; argv: string[] }[] = [];
  for (const [p] of parent) {
    let up = parent.get(p);
    while (up !== undefined && up !== pid && up > 1) up = parent.get(up);
    if (up !== pid) continue;
    const argv = (await readFile(`/proc/${p}/cmdline`, 'utf8').catch(() => '')).split('\0').filter(Boolean);
    out.push({ pid: p, argv });
  }
  return out;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('the built daemon as svcd.service runs it (Type=notify, KillMode=process, ExecStop on host shutdown)', () => {
  let tmp: string;
  let unit: ServiceUnit;
  let unitText: string;
  let notify: NotifyListener;
  let d: Daemon | undefined;
  let api: Client;
  const env = () => ({ PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin', ...unit.environment });
  /** ExecStop with a `systemctl` on PATH whose `list-jobs` prints `jobs`, as systemd runs it (the unit's environment). */
  async function execStop(jobs: string) {
    const fake = path.join(tmp, 'fake-systemctl');
    await mkdir(fake, { recursive: true });
    await writeFile(
      path.join(fake, 'systemctl'),
      `#!/bin/sh\n[ "$1" = list-jobs ] && printf '%s\\n' '${jobs}'\nexit 0\n`,
    );
    await chmod(path.join(fake, 'systemctl'), 0o755);
    return runCode(unit.execStop[0]!, unit.execStop.slice(1), { ...env(), PATH: `${fake}:${env().PATH}` });
  }
  const svcd = (...args: string[]) => runCode(path.join(tmp, 'usr/bin/svcd'), args, env());
  const initPid = async (name: string) => (await api.get(`/1.0/containers/${name}/state`)).json.metadata.pid as number;

  before(async () => {
    await ensureRootSubids();
    tmp = await mkdtemp(path.join(os.tmpdir(), 'svcd-unit-'));
    await chmod(tmp, 0o711); // the state directory is below it: unprivileged containers' root must pass through
    // The install script renders the unit with real paths (and builds dist/ when stale).
    const install = await runCode(
      'bash',
      [
        path.join(repoRoot, 'scripts/install-systemd.sh'),
        '--prefix',
        path.join(tmp, 'usr'),
        '--unit-dir',
        path.join(tmp, 'units'),
        '--state-dir',
        path.join(tmp, 'state'),
        '--no-deps',
        '--no-systemctl',
      ],
      process.env,
    );
    assert.equal(install.code, 0, install.stderr);
    unitText = await readFile(path.join(tmp, 'units/svcd.service'), 'utf8');
    unit = parseServiceUnit(unitText);
    notify = await listenNotify(path.join(tmp, 'notify.sock'));
    d = await startDaemon({
      command: unit.execStart,
      stateDir: unit.environment.SVCD_DIR!,
      env: { NOTIFY_SOCKET: notify.socketPath, SVCD_LOG_LEVEL: 'info' },
    });
    api = client({ socketPath: d.socketPath });
  });

  after(async () => {
    if (d && (d.proc.exitCode !== null || d.proc.signalCode !== null)) await d.restart().catch(() => {});
    for (const c of ((await api?.get('/1.0/containers').catch(() => undefined))?.json?.metadata ?? []) as string[]) {
      await api
        .put(`${c}/state`, { action: 'stop', force: true })
        .then((r) => api.get(`${r.json.operation}/wait?timeout=60`))
        .catch(() => {});
      await api
        .delete(c)
        .then((r) => api.get(`${r.json.operation}/wait?timeout=60`))
        .catch(() => {});
    }
    await d?.stop().catch(() => {});
    notify?.close();
    if (d) {
      for (const p of await monitordFor(path.join(d.stateDir, 'containers'))) process.kill(p.pid, 'SIGTERM');
      await cleanupHostUnder(d.stateDir);
    }
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  test('the rendered unit passes systemd-analyze verify and says what LXD packaging says', async () => {
    const v = await runCode('systemd-analyze', ['verify', path.join(tmp, 'units/svcd.service')], process.env);
    assert.equal(v.code, 0, v.stderr);
    assert.equal(v.stderr.trim(), '', 'no warnings');
    for (const [k, want] of Object.entries({
      Type: 'notify',
      NotifyAccess: 'main',
      KillMode: 'process',
      Restart: 'on-failure',
      LimitNOFILE: '1048576',
      Delegate: 'yes',
    }))
      assert.equal(unit.service[k], want, k);
    assert.ok(unit.service.TimeoutStartSec && unit.service.TimeoutStopSec);
    assert.deepEqual(unit.execStart, [path.join(tmp, 'usr/bin/svcd'), 'daemon']);
  });

  test('READY=1 comes with the daemon pid in its credentials; waitready, version; no tsx, npm or esbuild in the tree', async () => {
    const pid = d!.proc.pid!;
    const ready = await notify.next((m) => m.message.startsWith('READY=1'));
    assert.equal(ready.message, `READY=1\nMAINPID=${pid}`);
    assert.equal(ready.pid, pid, 'systemd attributes it to the main process');
    assert.equal((await svcd('waitready', '--timeout', '10')).code, 0);
    const pkg = JSON.parse(await readFile(path.join(repoRoot, 'package.json'), 'utf8'));
    assert.equal((await svcd('version')).stdout.trim(), pkg.version);
    // The unit's ExecStart (a sh wrapper) became node on the build, under the same pid.
    const own = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0').filter(Boolean);
    assert.equal(path.basename(own[0]!), 'node');
    assert.ok(
      own.some((a) => /\/dist\/bundle\/svcd\.js$/.test(a)),
      own.join(' '),
    );
    assert.ok(own.includes('--max-semi-space-size=2'), 'with the small young generation');
    const tree = await descendants(pid);
    assert.ok(
      tree.some((p) => p.argv[0]?.endsWith('.build/svcd-spawn')),
      'the spawn helper (C) runs',
    );
    assert.deepEqual(
      tree.filter((p) => path.basename(p.argv[0] ?? '') === 'node'),
      [],
      'node runs once: the daemon',
    );
    for (const p of [{ pid, argv: own }, ...tree])
      assert.ok(!p.argv.some((a) => /tsx|npm|esbuild/.test(a)), `no tsx/npm/esbuild: ${p.argv.join(' ')}`);
  });

  test('a plain restart (ExecStop off shutdown does nothing, SIGTERM to the main pid) leaves the containers running', async () => {
    await uploadBusybox(api, tmp);
    for (const [name, prio] of [
      ['p10', '10'],
      ['p5', '5'],
      ['p0', '0'],
    ] as const) {
      await waitOp(
        api,
        await api.post('/1.0/containers', {
          name,
          config: { 'boot.stop.priority': prio },
          source: { type: 'image', alias: 'bb' },
        }),
      );
      await waitOp(api, await api.put(`/1.0/containers/${name}/state`, { action: 'start' }));
    }
    const before = { p10: await initPid('p10'), p5: await initPid('p5'), p0: await initPid('p0') };
    for (const p of Object.values(before)) assert.ok(p > 0 && alive(p));

    const stop = await execStop('');
    assert.equal(stop.code, 0, stop.stderr);
    assert.equal((await svcd('waitready', '--timeout', '5')).code, 0, 'not a host shutdown: the daemon still serves');
    const seen = notify.messages.length;
    assert.equal(await d!.stop(), 0);
    await notify.next((m) => m.message === 'STOPPING=1', seen);
    for (const p of Object.values(before)) assert.ok(alive(p), `container init ${p} survived the daemon's stop`);

    const from = notify.messages.length;
    await d!.restart();
    const ready = await notify.next((m) => m.message.startsWith('READY=1'), from);
    assert.equal(ready.pid, d!.proc.pid);
    for (const [name, pid] of Object.entries(before)) {
      const st = (await api.get(`/1.0/containers/${name}/state`)).json.metadata;
      assert.equal(st.status, 'Running', name);
      assert.equal(st.pid, pid, `${name} is the same container (same init)`);
    }
  });

  test('svcd shutdown on host shutdown (ExecStop) stops the containers by boot.stop.priority, then the daemon exits 0', async () => {
    const inits = { p10: await initPid('p10'), p5: await initPid('p5'), p0: await initPid('p0') };
    const stoppedAt: Record<string, number> = {};
    const exited = new Promise<number | null>((resolve) => d!.proc.once('exit', (code) => resolve(code)));
    const watch = setInterval(() => {
      for (const [name, pid] of Object.entries(inits))
        if (!(name in stoppedAt) && !alive(pid)) stoppedAt[name] = Date.now();
    }, 5);
    try {
      const stop = await execStop('1234 poweroff.target                 start waiting');
      assert.equal(stop.code, 0, stop.stderr);
      assert.equal(d!.proc.exitCode ?? (await exited), 0, 'svcd shutdown returned once the daemon had exited 0');
    } finally {
      clearInterval(watch);
    }
    for (const [name, pid] of Object.entries(inits))
      if (!(name in stoppedAt) && !alive(pid)) stoppedAt[name] = Date.now();
    assert.deepEqual(
      Object.keys(stoppedAt).sort((a, b) => stoppedAt[a]! - stoppedAt[b]!),
      ['p10', 'p5', 'p0'],
      JSON.stringify(stoppedAt),
    );
    const order = [...d!.output().matchAll(/"priority":(-?\d+),"containers":\[([^\]]*)\]/g)].map(
      (m) => `${m[1]}:${m[2]}`,
    );
    assert.deepEqual(order, ['10:"p10"', '5:"p5"', '0:"p0"']);
    assert.ok(notify.messages.some((m) => m.message === 'STOPPING=1' && m.pid === d!.proc.pid));
    await eventually(async () => (await svcd('waitready', '--timeout', '0.2')).code === 1, 'the API to be gone');
  });
});
