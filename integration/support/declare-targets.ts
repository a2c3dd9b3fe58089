/**
 * The servers the declarative verbs' e2e tests run against, behind one shape: svcd (a daemon in a temp
 * state dir) or Debian's LXD 5.0.2 (support/lxd-daemon.ts). Each has its own test bridge name (interface
 * names are host-wide) and a free /24; with `image`, the busybox test image is there as alias `bb`
 * (uploaded to svcd, `lxc image import`ed into LXD).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { buildBusyboxImage } from './busybox-image.ts';
import { startBusyboxDaemon, teardownContainers } from './container-env.ts';
import { startDaemon } from './daemon.ts';
import { client, freePort, type Client } from './http.ts';
import { ensureRootSubids } from './lxc-host.ts';
import { startLxd } from './lxd-daemon.ts';
import { freeSubnet24 } from './networks.ts';

export interface DeclareTarget {
  /** The state directory whose unix.socket the svcd command reaches (SVCD_DIR). */
  dir: string;
  api: Client;
  bridge: string;
  cidr: string;
  /** HTTPS on loopback: the address and the server certificate. */
  https(): Promise<{ url: string; cert: string }>;
  /** LXD only: its own `lxd` command against it (`lxd init --dump`, `lxd init --preseed`). */
  lxd?(args: string[], input?: string): { code: number | null; out: string; err: string };
  destroy(): Promise<void>;
}

export async function svcdTarget(opts: { bridge: string; salt: number; image: boolean }): Promise<DeclareTarget> {
  await ensureRootSubids();
  const started = opts.image
    ? await startBusyboxDaemon()
    : { d: await startDaemon({ env: { SVCD_LOG_LEVEL: 'info' } }), imgDir: undefined };
  const d = started.d;
  const api = client({ socketPath: d.socketPath });
  return {
    dir: d.stateDir,
    api,
    bridge: opts.bridge,
    cidr: (await freeSubnet24(opts.salt)).cidr,
    async https() {
      const port = await freePort();
      assert.equal((await api.patch('/1.0', { config: { 'core.https_address': `127.0.0.1:${port}` } })).status, 200);
      return { url: `https://127.0.0.1:${port}`, cert: (await api.get('/1.0')).json.metadata.environment.certificate };
    },
    destroy: () => teardownContainers(d, api, [started.imgDir]),
  };
}

export async function lxdTarget(opts: {
  name: string;
  bridge: string;
  salt: number;
  image: boolean;
}): Promise<DeclareTarget> {
  await ensureRootSubids();
  const l = await startLxd(opts.name);
  const imgDir = await mkdtemp(path.join(os.tmpdir(), 'svcd-img-'));
  try {
    if (opts.image) {
      const img = await buildBusyboxImage({ dir: imgDir, format: 'unified', compression: 'gzip' });
      if (img.format !== 'unified') throw new Error('unexpected image format');
      const imported = l.lxc(['image', 'import', img.file, '--alias', 'bb']);
      assert.equal(imported.code, 0, imported.err);
    }
  } catch (e) {
    await l.destroy();
    await rm(imgDir, { recursive: true, force: true });
    throw e;
  }
  return {
    dir: l.dir,
    api: l.api,
    bridge: opts.bridge,
    cidr: (await freeSubnet24(opts.salt)).cidr,
    https: async () => ({ url: l.url, cert: l.cert }),
    lxd(args, input) {
      const env = { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin', LXD_DIR: l.dir };
      const r = spawnSync('lxd', args, { env, input, encoding: 'utf8', timeout: 120_000 });
      return { code: r.status, out: r.stdout ?? '', err: r.stderr ?? '' };
    },
    async destroy() {
      // `lxd shutdown` stops its containers and takes its bridges down (checked after the runs: none is left).
      await l.destroy();
      await rm(imgDir, { recursive: true, force: true });
    },
  };
}
