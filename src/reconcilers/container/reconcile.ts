import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import type { Db } from '../../db/types.ts';
import { CONTAINER_KIND, deleteContainerRow, readContainerById } from '../../desired/containers.ts';
import { expandConfig } from '../../desired/expand.ts';
import { containerRuntime, containers, profiles, storageVolumes, type ContainerRow } from '../../desired/schema/index.ts';
import { computeIdmap } from '../../host/idmap/compute-idmap.ts';
import type { SubidRange } from '../../host/idmap/types.ts';
import { ContainerStartError, containerState, freezeContainer, startContainer, stopContainer, unfreezeContainer } from '../../host/lxc/lifecycle.ts';
import { renderLxcConfig } from '../../host/lxc/render-config.ts';
import type { LxcDiskMount, LxcNic } from '../../host/lxc/types.ts';
import { TerminalError, type Reconciler } from '../runtime/index.ts';
import { readFacts, writeFacts } from '../status-settler.ts';
import { ensureRootfs, readyPool, rootPoolOf, type RootfsDeps } from './ensure-rootfs.ts';
import { computeLxcSpec, type HostFacts } from './lxc-spec.ts';

interface ContainerFacts {
  /** The last power request carried out. */
  doneSeq?: number;
}

export interface ContainerReconcilerDeps extends RootfsDeps {
  host: HostFacts;
  subids: { subuid: SubidRange[]; subgid: SubidRange[] };
  /** Refresh the runtime view of a container now (observer). */
  onHostChange?: (id: string) => Promise<void>;
}

export const lxcPathOf = (stateDir: string) => path.join(stateDir, 'containers');
export const logDirOf = (stateDir: string, c: { project: string; name: string }) => path.join(stateDir, 'logs', `${c.project}_${c.name}`);

/**
 * Converge one container: its root volume, its LXC config, its power state (explicitly desired,
 * never inferred), or, once marked for deletion, its removal. A container is known to LXC and
 * storage by its stable id; its name is only the hostname and the API's.
 */
export function createContainerReconciler(deps: ContainerReconcilerDeps): Reconciler {
  const { db, stateDir } = deps;
  const lxcPath = lxcPathOf(stateDir);

  async function expanded(c: ContainerRow) {
    const profs = await db.select().from(profiles).where(eq(profiles.project, c.project));
    const byName = new Map(profs.map((p) => [p.name, p]));
    return expandConfig(c.profiles.map((n) => byName.get(n)).filter((p) => p !== undefined), c);
  }

  async function remove(c: ContainerRow, signal: AbortSignal) {
    const ref = { name: c.id, lxcPath, signal };
    await stopContainer({ ...ref, force: true }).catch(() => undefined);
    const [vol] = await db.select().from(storageVolumes).where(eq(storageVolumes.id, c.id));
    if (vol) {
      const pool = await readyPool(deps, vol.pool);
      await pool.driver.removeVolume(pool.spec, { id: c.id, type: 'container' }, signal);
      await db.delete(storageVolumes).where(eq(storageVolumes.id, c.id));
    }
    await rm(path.join(lxcPath, c.id), { recursive: true, force: true });
    await db.delete(containerRuntime).where(eq(containerRuntime.id, c.id));
    await deleteContainerRow(db, c.id);
  }

  /** Render the LXC config and write it when it changed (it takes effect at the next start). */
  async function writeConfig(c: ContainerRow, config: Record<string, string>, devices: Record<string, Record<string, string>>, rootfs: string) {
    const logDir = logDirOf(stateDir, c);
    await mkdir(logDir, { recursive: true, mode: 0o700 });
    const nics: LxcNic[] = Object.entries(devices)
      .filter(([, d]) => d.type === 'nic')
      .map(([name, d]) => ({ name: d.name ?? name, parent: d.parent!, ...(d.hwaddr ? { hwaddr: d.hwaddr } : {}), ...(d.mtu ? { mtu: Number(d.mtu) } : {}), ...(d.host_name ? { hostName: d.host_name } : {}) }));
    const disks: LxcDiskMount[] = Object.values(devices)
      .filter((d) => d.type === 'disk' && d.path !== '/' && d.source?.startsWith('/'))
      .map((d) => ({ source: d.source!, target: d.path!, kind: 'dir', readonly: /^(true|1)$/i.test(d.readonly ?? ''), ...(d.propagation ? { propagation: d.propagation as LxcDiskMount['propagation'] } : {}), optional: /^(true|1)$/i.test(d.optional ?? '') }));
    const privileged = /^(true|1|yes|on)$/i.test(config['security.privileged'] ?? '');
    const idmap = computeIdmap({
      ...deps.subids,
      privileged,
      isolated: /^(true|1|yes|on)$/i.test(config['security.idmap.isolated'] ?? ''),
      ...(config['security.idmap.size'] ? { size: Number(config['security.idmap.size']) } : {}),
      ...(config['security.idmap.base'] ? { base: Number(config['security.idmap.base']) } : {}),
      ...(config['raw.id_map'] ? { rawIdmap: config['raw.id_map'] } : {}),
      index: c.idmapIndex,
    });
    const spec = computeLxcSpec({
      hostname: c.name,
      architecture: c.architecture,
      rootfsPath: rootfs,
      config,
      idmap,
      host: deps.host,
      logFile: path.join(logDir, 'lxc.log'),
      consoleLogFile: path.join(logDir, 'console.log'),
      nics,
      disks,
    });
    const file = path.join(lxcPath, c.id, 'config');
    const text = renderLxcConfig(spec);
    if ((await readFile(file, 'utf8').catch(() => '')) === text) return { file, logFile: spec.logFile! };
    await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
    await writeFile(`${file}.new`, text, { mode: 0o600 });
    await rename(`${file}.new`, file);
    return { file, logFile: spec.logFile! };
  }

  async function converge(id: string, signal: AbortSignal) {
    const c = await readContainerById(db, id);
    if (!c) return {};
    if (c.deletingAt) {
      await remove(c, signal);
      return { observedGeneration: c.generation };
    }
    const { config, devices } = await expanded(c);
    const { rootfs } = await ensureRootfs(deps, c, rootPoolOf(devices), signal);
    const cfg = await writeConfig(c, config, devices, rootfs);

    const facts = (await readFacts(db, CONTAINER_KIND, id)) as ContainerFacts;
    const req = c.powerRequest;
    const fresh = !!req && req.seq > (facts.doneSeq ?? 0);
    const ref = { name: c.id, lxcPath, signal };
    const stopOpts = { force: fresh && req!.force, timeoutMs: fresh && req!.timeout > 0 ? req!.timeout * 1000 : 30_000 };
    const start = () =>
      startContainer({ ...ref, configFile: cfg.file, logFile: cfg.logFile }).catch((e: unknown) => {
        // LXC refused this config: retrying the same desired state will not help.
        throw e instanceof ContainerStartError ? new TerminalError(e.message) : e;
      });
    let { state } = await containerState(ref);
    if (fresh && req!.action === 'restart' && state !== 'STOPPED') {
      if (state === 'FROZEN') await unfreezeContainer(ref);
      await stopContainer({ ...ref, ...stopOpts });
      state = 'STOPPED';
    }
    if (c.power === 'running' || c.power === 'frozen') {
      if (state === 'STOPPED') await start();
      if (c.power === 'running' && state === 'FROZEN') await unfreezeContainer(ref);
      if (c.power === 'frozen' && state !== 'FROZEN') await freezeContainer(ref);
    } else if (state !== 'STOPPED') {
      if (state === 'FROZEN') await unfreezeContainer(ref);
      await stopContainer({ ...ref, ...stopOpts });
    }
    if (fresh) await writeFacts(db, CONTAINER_KIND, id, { ...facts, doneSeq: req!.seq });
    await deps.onHostChange?.(id);
    return { observedGeneration: c.generation };
  }

  return {
    kind: CONTAINER_KIND,
    async listKeys() {
      return (await db.select({ id: containers.id }).from(containers)).map((r) => r.id);
    },
    reconcile: (id, ctx) => converge(id, ctx.signal),
  };
}
