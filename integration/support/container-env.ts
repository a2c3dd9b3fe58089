import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { buildBusyboxImage } from './busybox-image.ts';
import { startDaemon, type Daemon } from './daemon.ts';
import { cleanupHostUnder } from './host-cleanup.ts';
import { client, eventually, type Client } from './http.ts';
import { ensureRootSubids, findProcesses, monitordFor } from './lxc-host.ts';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Wait for an async answer's operation and assert how it ended; returns the operation. */
export async function waitOp(api: Client, res: { status: number; json: any; text: string }, want = 'Success') {
  assert.equal(res.status, 202, res.text);
  const done = await api.get(`${res.json.operation}/wait?timeout=120`);
  assert.equal(done.json.metadata.status, want, done.json.metadata.err);
  return done.json.metadata;
}

/** Build the busybox test image in `dir`, upload it and alias it `bb`; returns its fingerprint and file. */
export async function uploadBusybox(api: Client, dir: string): Promise<{ fingerprint: string; file: string }> {
  const img = await buildBusyboxImage({ dir, format: 'unified', compression: 'gzip' });
  if (img.format !== 'unified') throw new Error('unexpected image format');
  await waitOp(
    api,
    await api.post('/1.0/images', await readFile(img.file), { 'Content-Type': 'application/octet-stream' }),
  );
  assert.equal((await api.post('/1.0/images/aliases', { name: 'bb', target: img.fingerprint })).status, 200);
  return { fingerprint: img.fingerprint, file: img.file };
}

/**
 * The usual start of a container suite: root's subordinate ids in place, a daemon (info logs) with
 * the busybox image uploaded as `bb`, built in a temp dir that {@link teardownContainers} removes.
 * `env`: more daemon settings (SVCD_SYSFS_ROOT, SVCD_DEV_ROOT for a fake hardware tree); `command`: the argv
 * that starts it (support/daemon.ts's default: src/main.ts through tsx).
 */
export async function startBusyboxDaemon(
  env: Record<string, string> = {},
  opts: { command?: string[] } = {},
): Promise<{ d: Daemon; api: Client; imgDir: string; image: { fingerprint: string; file: string } }> {
  await ensureRootSubids();
  const imgDir = await mkdtemp(path.join(os.tmpdir(), 'svcd-img-'));
  const d = await startDaemon({ env: { SVCD_LOG_LEVEL: 'info', ...env }, ...opts });
  const api = client({ socketPath: d.socketPath });
  return { d, api, imgDir, image: await uploadBusybox(api, imgDir) };
}

/** The LXC name (svcd's stable id) of container `name`, from the rendered config's `lxc.uts.name`. */
export async function lxcIdOf(stateDir: string, name: string): Promise<string> {
  const lxcPath = path.join(stateDir, 'containers');
  for (const id of await readdir(lxcPath).catch(() => [] as string[])) {
    const cfg = await readFile(path.join(lxcPath, id, 'config'), 'utf8').catch(() => '');
    if (cfg.split('\n').includes(`lxc.uts.name = ${name}`)) return id;
  }
  throw new Error(`no LXC config for ${name}`);
}

/** The container's rootfs directory on the host, from the LXC config svcd wrote (`lxc.rootfs.path = dir:…`). */
export async function rootfsDirOf(stateDir: string, id: string): Promise<string> {
  const m = /^lxc\.rootfs\.path = (?:dir:)?(.+)$/m.exec(
    await readFile(path.join(stateDir, 'containers', id, 'config'), 'utf8'),
  );
  if (!m) throw new Error(`no lxc.rootfs.path for ${id}`);
  return m[1]!;
}

/**
 * Tear down what a container test made, also after a failure: force-stop and delete every
 * container through the API, stop the daemon, end its lxc-monitord, unmount and detach what is
 * left under its state directory, remove it and the given temporary directories.
 */
export async function teardownContainers(
  d: Daemon | undefined,
  api: Client | undefined,
  dirs: (string | undefined)[] = [],
): Promise<void> {
  const list = (await api?.get('/1.0/containers').catch(() => undefined))?.json?.metadata;
  for (const c of Array.isArray(list) ? (list as string[]) : []) {
    await api!
      .put(`${c}/state`, { action: 'stop', force: true })
      .then((r) => api!.get(`${r.json.operation}/wait?timeout=60`))
      .catch(() => {});
    await api!
      .delete(c)
      .then((r) => api!.get(`${r.json.operation}/wait?timeout=60`))
      .catch(() => {});
  }
  // Managed networks (their bridges, dnsmasq and firewall rules go with them); what the API could not remove, below.
  const nets = (await api?.get('/1.0/networks?recursion=1').catch(() => undefined))?.json?.metadata;
  const managed = (Array.isArray(nets) ? (nets as { name: string; managed: boolean }[]) : [])
    .filter((n) => n.managed)
    .map((n) => n.name);
  for (const n of managed) await api!.delete(`/1.0/networks/${n}`).catch(() => {});
  await d?.stop().catch(() => {});
  for (const n of managed) await run('ip', ['link', 'del', n]).catch(() => {});
  if (d)
    for (const p of await findProcesses(
      (a) => path.basename(a[0] ?? '') === 'dnsmasq' && a.some((x) => x.includes(d.stateDir)),
    ))
      process.kill(p.pid, 'SIGKILL');
  if (d) {
    const lxcPath = path.join(d.stateDir, 'containers');
    // Whatever the API could not remove (a failed test, a daemon that died): stop it with LXC itself.
    const left = await run('lxc-ls', ['-P', lxcPath, '-1']).then(
      (r) => r.stdout.split(/\s+/).filter(Boolean),
      () => [] as string[],
    );
    for (const id of left) await run('lxc-stop', ['-k', '-n', id, '-P', lxcPath]).catch(() => {});
    // lxc-monitor (left behind if the daemon died) and lxc-monitord of this state dir, until none is left.
    await eventually(async () => {
      const procs = [
        ...(await findProcesses((a) => path.basename(a[0] ?? '') === 'lxc-monitor' && a.includes(lxcPath))),
        ...(await monitordFor(lxcPath)),
      ];
      for (const p of procs) {
        try {
          process.kill(p.pid, 'SIGTERM');
        } catch {
          /* already gone */
        }
      }
      return procs.length === 0;
    }, 'no lxc-monitor(d) left for this state dir').catch(() => {});
    await cleanupHostUnder(d.stateDir);
  }
  await d?.destroy();
  for (const dir of dirs) if (dir) await rm(dir, { recursive: true, force: true });
}
