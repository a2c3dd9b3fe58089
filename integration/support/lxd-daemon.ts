/**
 * Debian's LXD 5.0.2 as a peer for interop tests (migration, `svcd apply` against LXD): one daemon per
 * call, with its own LXD_DIR under /tmp, a `dir` (or btrfs) pool named `default`, no network, and HTTPS on
 * 127.0.0.1:<free port>. Skip the test when `lxdAvailable()` is false.
 *
 * LXD fetches instance types from images.linuxcontainers.org at start. Its HTTP client honours the proxy
 * variables, so they point at a closed loopback port: nothing leaves the machine.
 *
 *   const l = await startLxd('l1');
 *   l.lxc(['list'])                     // Debian's lxc against it (LXD_DIR)
 *   l.api.get('/1.0')                   // the unix socket
 *   await l.destroy();
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { client, freePort, type Client } from './http.ts';

export interface LxdHost {
  name: string;
  dir: string;
  socketPath: string;
  api: Client;
  port: number;
  url: string;
  /** The server certificate (PEM). */
  cert: string;
  trustPassword: string;
  /** Run Debian's lxc against this daemon (LXD_DIR). */
  lxc(
    args: string[],
    opts?: { input?: string; env?: Record<string, string> },
  ): { code: number; out: string; err: string };
  log(): string;
  destroy(): Promise<void>;
}

export function lxdAvailable(): boolean {
  return existsSync('/usr/bin/lxd') || existsSync('/usr/sbin/lxd');
}

const closedProxy = 'http://127.0.0.1:9';

/**
 * `pool: 'btrfs'`: the default pool is btrfs on a loop file LXD makes in its LXD_DIR (1 GiB, sparse).
 * `init: false`: no preseed (no pool, profile or HTTPS address): a daemon that can join a cluster.
 */
export async function startLxd(name: string, opts: { pool?: 'dir' | 'btrfs'; init?: boolean } = {}): Promise<LxdHost> {
  // Short path: LXD's unix socket lives in LXD_DIR.
  const dir = await mkdtemp(`/tmp/lxd-${name}-`);
  const env = {
    PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin',
    HOME: process.env.HOME ?? '/root',
    LXD_DIR: dir,
    HTTP_PROXY: closedProxy,
    HTTPS_PROXY: closedProxy,
    http_proxy: closedProxy,
    https_proxy: closedProxy,
    NO_PROXY: '127.0.0.1,localhost',
    no_proxy: '127.0.0.1,localhost',
  };
  const logFile = path.join(dir, 'lxd.log');
  const proc: ChildProcess = spawn('lxd', ['--group', 'root', '--logfile', logFile], { env, stdio: 'ignore' });
  const lxc = (args: string[], opts: { input?: string; env?: Record<string, string> } = {}) => {
    const r = spawnSync('lxc', args, {
      env: { ...env, ...opts.env },
      input: opts.input,
      encoding: 'utf8',
      timeout: 300_000,
    });
    return { code: r.status ?? -1, out: r.stdout ?? '', err: r.stderr ?? '' };
  };
  const destroy = async () => {
    spawnSync('lxd', ['shutdown', '--timeout', '30'], { env, timeout: 40_000 });
    if (proc.exitCode === null) proc.kill('SIGKILL');
    // LXD leaves its storage mounts behind when killed: unmount before removing.
    spawnSync('sh', ['-c', 'grep -o " $0[^ ]*" /proc/self/mounts | sort -r | xargs -r -n1 umount -l', dir]);
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const wait = spawnSync('lxd', ['waitready', '--timeout', '60'], { env, encoding: 'utf8' });
    assert.equal(wait.status, 0, `lxd ${name} did not start: ${wait.stderr}`);
    const port = await freePort();
    const trustPassword = `pw-${name}`;
    const preseed = [
      'config:',
      `  core.https_address: 127.0.0.1:${port}`,
      `  core.trust_password: ${trustPassword}`,
      '  images.auto_update_interval: "0"',
      'storage_pools:',
      '- name: default',
      ...(opts.pool === 'btrfs' ? ['  driver: btrfs', '  config: {size: 1GiB}'] : ['  driver: dir']),
      'profiles:',
      '- name: default',
      '  devices:',
      '    root: {path: /, pool: default, type: disk}',
      '',
    ].join('\n');
    if (opts.init !== false) {
      const init = spawnSync('lxd', ['init', '--preseed'], { env, input: preseed, encoding: 'utf8' });
      assert.equal(init.status, 0, `lxd init: ${init.stderr}`);
    }
    const socketPath = path.join(dir, 'unix.socket');
    const api = client({ socketPath });
    const cert = (await api.get('/1.0')).json.metadata.environment.certificate as string;
    return {
      name,
      dir,
      socketPath,
      api,
      port,
      url: `https://127.0.0.1:${port}`,
      cert,
      trustPassword,
      lxc,
      log: () => spawnSync('cat', [logFile], { encoding: 'utf8' }).stdout ?? '',
      destroy,
    };
  } catch (e) {
    await destroy();
    throw e;
  }
}
