import type { Tx } from '../../db/types.ts';
import { CONTAINER_KIND, expandStoredContainer, readContainerById } from '../../desired/containers.ts';
import { containers, type ContainerRow } from '../../desired/schema/index.ts';
import { deleteContainerRows } from '../../desired/delete-container-rows.ts';
import { ContainerStartError } from '../../host/lxc/lxc-errors.ts';
import type { LxcState } from '../../host/lxc/lxc-args.ts';
import { TerminalError, type ReconcileResult, type Reconciler } from '../runtime/index.ts';
import { announceConverged, announceDeleted } from './announce.ts';
import { openFacts, type FactsRecord } from '../status-settler.ts';
import { applyTemplates } from './apply-templates.ts';
import { ensureLive } from './ensure-live.ts';
import { giveBackLiveNics, physicalStatesOf, releaseLiveNics } from './ensure-live-nics.ts';
import type { PhysicalState } from '../../host/lxc/live-nic-types.ts';
import { releaseProxies } from './ensure-proxies.ts';
import { requireNicParents } from './resolve-nics.ts';
import { ensureDhcpHosts, requireNetworksReady } from './ensure-network-nics.ts';
import { ensureLxcConfig } from './ensure-lxc-config.ts';
import { followLogDir } from './follow-log-dir.ts';
import { ensureRootfs, rootPoolOf } from './ensure-rootfs.ts';
import { ensureSnapshots, restoreSnapshot } from './ensure-snapshots.ts';
import type { ContainerReconcilerDeps } from './types.ts';
import type { ContainerFacts } from './container-facts.ts';
import { removeContainer } from './remove-container.ts';
import { logDirOf, lxcPathOf } from '../../host/layout.ts';

export { logDirOf, lxcPathOf };

/**
 * Converge one container: its root volume, its LXC config, its power state (explicitly desired,
 * never inferred), or, once marked for deletion, its removal. A container is known to LXC and
 * storage by its stable id; its name is only the hostname and the API's.
 */
export function createContainerReconciler(deps: ContainerReconcilerDeps): Reconciler {
  const { db, stateDir, lxc } = deps;
  const lxcPath = lxcPathOf(stateDir);
  const trash = deps.trash;

  async function converge(id: string, signal: AbortSignal) {
    // Held until its boot wave's turn (the boot sequencer queues it then): only its row is read, to see whether
    // it is still wanted up (a deletion or a stop meanwhile goes at once).
    const heldForBoot = !!deps.boot && !deps.boot.mayStart(id);
    // The row and the facts together (on PostgreSQL two connections, one round trip). One copy of the facts
    // for the whole reconcile: every step records in it.
    const [c, opened] = await Promise.all([
      readContainerById(db, id),
      heldForBoot ? undefined : openFacts<ContainerFacts>(db, CONTAINER_KIND, id),
    ]);
    // Held by another member of the cluster (moved there): left alone, and what this host still has of it goes.
    if (deps.ownership && c && c.location !== deps.node) {
      await deps.ownership.release(id, signal);
      return {};
    }
    if (!c || c.deletingAt) deps.keeper?.forget(id);
    else deps.keeper?.remember(c);
    if (!c) return {};
    // Desired up but not its boot wave's turn yet: nothing to do before then, so the wave under way has the host
    // to itself (the requeue is only a safety net).
    if (heldForBoot && !c.deletingAt && (c.power === 'running' || c.power === 'frozen'))
      return { requeueAfterMs: 1_000 };
    const record = opened ?? (await openFacts<ContainerFacts>(db, CONTAINER_KIND, id));
    if (c.deletingAt) {
      await removeContainer(deps, c, record, signal);
      // Its rows go with its status row and its operations' settlement, in one transaction (status-settler.ts).
      return {
        observedGeneration: c.generation,
        gone: true,
        removeRows: (tx: Tx) => deleteContainerRows(tx, c.id),
        afterSettle: () => {
          deps.live?.delete(c.id);
          announceDeleted(deps, c);
        },
      };
    }
    const { config, devices } = await expandStoredContainer(db, c);
    // What must be on disk before the next step (a fill under way, copied snapshots, a restore) is saved at
    // once; the rest (noted: what a crash would only redo) with the convergence, or when the reconcile ends
    // without one.
    let result: ReconcileResult;
    try {
      result = await convergeWith(c, config, devices, record, signal);
    } catch (e) {
      await record.flush().catch(() => {});
      throw e;
    }
    // Converged: what was noted is written with the convergence (one write); else now.
    if (result.observedGeneration !== undefined) {
      const facts = record.take();
      return facts ? { ...result, facts } : result;
    }
    await record.flush().catch(() => {});
    return result;
  }

  async function convergeWith(
    c: ContainerRow,
    config: Record<string, string>,
    devices: Record<string, Record<string, string>>,
    record: FactsRecord<ContainerFacts>,
    signal: AbortSignal,
  ) {
    const { id } = c;
    const { facts } = record;
    const {
      rootfs,
      pool,
      ref: volRef,
    } = await ensureRootfs(deps, c, rootPoolOf(devices), signal, {
      record,
      beforeFill: async (trigger) => {
        facts.pendingTemplates = trigger;
        await record.save();
      },
    });
    const volumeDir = pool.driver.volumePath(pool.spec, volRef);
    const templates = (trigger: 'create' | 'copy' | 'start') =>
      applyTemplates({ files: deps.rootfsFiles, volumeDir, rootfs, trigger, container: c, config, devices });
    // A new volume from an image (create) or a container (copy): its templates, once, before any start.
    if (facts.pendingTemplates) {
      await templates(facts.pendingTemplates);
      delete facts.pendingTemplates;
      record.note();
    }
    const ref = { name: c.id, lxcPath, signal };
    await ensureSnapshots(deps, c, pool, volRef, signal);
    if (c.restore && c.restore.seq > (facts.restoredSeq ?? 0)) {
      // Restore on a stopped container (killed, not shut down: the observer must not read it as a power-off).
      await lxc.stop({ ...ref, force: true });
      await restoreSnapshot(deps, c, pool, volRef, c.restore.snapshotId, signal);
      facts.restoredSeq = c.restore.seq;
      await record.save();
    }
    // Renamed: its logs move to the new name before the config names that directory.
    if (await followLogDir(stateDir, c, facts, trash, deps.containerFiles)) record.note();
    const cfg = await ensureLxcConfig(deps, c, config, devices, rootfs, signal, facts.infiniband);
    deps.keeper?.remember(c, { configFile: cfg.file, logFile: cfg.logFile, consoleLogFile: cfg.consoleLogFile });
    // Which InfiniBand port each infiniband device is: the host stops showing it while the interface is inside.
    if (JSON.stringify(cfg.infiniband) !== JSON.stringify(facts.infiniband ?? {})) {
      if (Object.keys(cfg.infiniband).length) facts.infiniband = cfg.infiniband;
      else delete facts.infiniband;
      record.note();
    }
    if (await ensureDhcpHosts(deps, c, cfg.live.nics, facts)) record.note();
    announceConverged(deps, c, record);
    // Before a start, so the guest finds its socket from its first moment.
    await deps.devsvc?.sync(c.id, { row: c, config, devices });

    const req = c.powerRequest;
    const fresh = !!req && req.seq > (facts.doneSeq ?? 0);
    const stopOpts = {
      force: fresh && req!.force,
      timeoutMs: fresh && req!.timeout > 0 ? req!.timeout * 1000 : 30_000,
    };
    const start = async () => {
      await templates('start');
      // LXC appends to the console log: start each run with an empty one (and no rotated part), so
      // it holds this run (the last run once stopped).
      await deps.containerFiles.resetLog(cfg.consoleLogFile);
      const run = () => lxc.start({ ...ref, configFile: cfg.file, logFile: cfg.logFile, knownStopped: true });
      // At boot, the host's part of a start is bounded (boot-sequencer.ts); the rest of this reconcile is not.
      return (deps.boot ? deps.boot.start(c.id, run) : run()).catch(async (e: unknown) => {
        if (!(e instanceof ContainerStartError)) throw e;
        // A failed start leaves LXC's empty monitor cgroups behind: remove them.
        await lxc.removeLeftovers(c.id).catch(() => undefined);
        // LXC refused this config: retrying the same desired state will not help.
        throw new TerminalError(e.message);
      });
    };
    // What LXC shows now, kept up to date by each step: the observer is told the outcome (no second look).
    // A config this reconcile created was never there to start from: STOPPED without asking.
    let now: { state: LxcState; pid?: number | undefined } = cfg.created
      ? { state: 'STOPPED' as const }
      : await lxc.state(ref);
    let startedNow = false;
    let physicalWas: Record<string, PhysicalState> | undefined;
    // Before a stop, the physical nics svcd moved in live go back to the host (LXC knows only its config's).
    const giveBack = () => (now.pid ? giveBackLiveNics(deps.liveNics, now.pid, facts.live?.nics, signal) : undefined);
    // Stopped: what the last run had live goes (what svcd set around its nics, its proxies; a physical nic
    // that came back on its own gets its name again), before any new start needs them.
    const dropLive = async () => {
      deps.live?.delete(id);
      if (!facts.live) return;
      await releaseLiveNics(deps.liveNics, facts.live.nics, signal);
      await releaseProxies(deps.proxy, id, facts.live.proxyNat, signal);
      delete facts.live;
      record.note();
    };
    if (fresh && req!.action === 'restart' && now.state !== 'STOPPED') {
      await giveBack();
      await lxc.stop({ ...ref, ...stopOpts });
      now = { state: 'STOPPED' };
    }
    if (c.power === 'running' || c.power === 'frozen') {
      if (now.state === 'STOPPED') {
        await dropLive();
        // Its managed networks up first: else wait for them (they enqueue it when they converge).
        await requireNetworksReady(db, deps.node, cfg.live.nics);
        await requireNicParents(cfg.live.nics, deps.liveNics);
        physicalWas = await physicalStatesOf(cfg.live.nics, deps.liveNics);
        now = await start();
        startedNow = true;
      }
      if (c.power === 'running' && now.state === 'FROZEN') {
        await lxc.unfreeze(ref);
        now = { ...now, state: 'RUNNING' };
      }
      if (c.power === 'frozen' && now.state !== 'FROZEN') {
        await lxc.freeze(ref);
        now = { ...now, state: 'FROZEN' };
      }
    } else if (now.state !== 'STOPPED') {
      await giveBack();
      await lxc.stop({ ...ref, ...stopOpts });
      now = { state: 'STOPPED' };
    }
    if (now.state === 'RUNNING' || now.state === 'FROZEN') {
      // Running: the config reaches it now, not at its next start.
      const pid = now.pid ?? (await lxc.state(ref)).pid;
      const beforeAttachNic = (nic: (typeof cfg.live.nics)[number]) => requireNetworksReady(db, deps.node, [nic]);
      if (
        pid &&
        (await ensureLive({
          liveCgroups: deps.liveCgroups,
          liveMounts: deps.liveMounts,
          liveNics: deps.liveNics,
          proxy: deps.proxy,
          host: deps.host,
          c,
          pid,
          startedNow,
          physicalWas,
          config,
          devices,
          ...cfg.live,
          beforeAttachNic,
          facts,
          registry: deps.live,
          signal,
        }))
      )
        record.note();
    } else await dropLive();
    // The request is done: recorded in the same write as the convergence that settles its operation.
    // A crash before that write does it once more (a start or stop changes nothing; a restart restarts).
    if (fresh) {
      facts.doneSeq = req!.seq;
      record.note();
    }
    await deps.onHostChange?.(id, now, c);
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
