import path from 'node:path';
import { eq } from 'drizzle-orm';
import { type ContainerRow, storageVolumes } from '../../desired/schema/index.ts';
import { lxcPathOf, stateTrashOf } from '../../host/layout.ts';
import type { FactsRecord } from '../status-settler.ts';
import type { ContainerFacts } from './container-facts.ts';
import { giveBackLiveNics, releaseLiveNics } from './ensure-live-nics.ts';
import { removeDhcpHosts } from './ensure-network-nics.ts';
import { releaseProxies } from './ensure-proxies.ts';
import { readyPool } from './ensure-rootfs.ts';
import { removeSnapshots } from './ensure-snapshots.ts';
import type { ContainerReconcilerDeps } from './types.ts';

/**
 * A container marked for deletion, taken off the host: stopped (its physical nics moved in live given back
 * first), then at once its nics' surroundings, its proxies and LXC directory, its DHCP host entries, its
 * guest socket, its snapshots and root volume. The caller deletes its rows once this succeeded.
 */
export async function removeContainer(
  deps: ContainerReconcilerDeps,
  c: ContainerRow,
  record: FactsRecord<ContainerFacts>,
  signal: AbortSignal,
): Promise<void> {
  const { db, stateDir, lxc, trash } = deps;
  const lxcPath = lxcPathOf(stateDir);
  const ref = { name: c.id, lxcPath, signal };
  // Read together: its root volume's pool, and its state from the host's own records (no process: a stopped
  // container needs no lxc-stop). `record` is what svcd set up on the host and on its networks for its nics;
  // it names the volume row it wrote (ensure-rootfs.ts), so the row itself is read only when it does not.
  const recorded = record.facts.volumeRow?.split('/')[0];
  const [[vol], now] = await Promise.all([
    recorded
      ? [{ pool: recorded }]
      : db.select({ pool: storageVolumes.pool }).from(storageVolumes).where(eq(storageVolumes.id, c.id)),
    lxc.state(ref).catch(() => undefined),
  ]);
  const movedLive = Object.values(record.facts.live?.nics ?? {}).some((r) => r.movedLive);
  const pid = movedLive ? now?.pid : undefined;
  if (pid) await giveBackLiveNics(deps.liveNics, pid, record.facts.live?.nics, signal).catch(() => undefined);
  if (now?.state !== 'STOPPED') await lxc.stop({ ...ref, force: true }).catch(() => undefined);
  // Once it is down, what it held goes at once: each step is independent, and absent is success (a failed
  // step fails the pass, which is retried whole).
  await Promise.all([
    releaseLiveNics(deps.liveNics, record.facts.live?.nics, signal),
    // Its LXC directory, once the forwarders its pid files name are stopped: renamed into the state dir's trash
    // and removed in the background (a rename in the delete, not a walk of the tree). Its log directory stays
    // (the spec: a deleted container's logs can still be listed and read).
    (async () => {
      await releaseProxies(deps.proxy, c.id, record.facts.live?.proxyNat, signal);
      await trash.discard(path.join(lxcPath, c.id), stateTrashOf(stateDir));
    })(),
    removeDhcpHosts(deps, record.facts),
    deps.devsvc?.remove(c.id),
    vol &&
      (async () => {
        const pool = await readyPool(deps, vol.pool);
        await removeSnapshots(deps, c, pool, { id: c.id, type: 'container' }, signal);
        await pool.driver.removeVolume(pool.spec, { id: c.id, type: 'container' }, signal);
      })(),
  ]);
}
