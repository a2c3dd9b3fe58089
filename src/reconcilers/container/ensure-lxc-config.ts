import path from 'node:path';
import { validateExpandedDevices } from '../../desired/devices.ts';
import type { ContainerRow } from '../../desired/schema/index.ts';
import { computeIdmap } from '../../host/idmap/compute-idmap.ts';
import type { Idmap } from '../../host/idmap/types.ts';
import { renderLxcConfig } from '../../host/lxc/render-config.ts';
import type { LxcDiskMount, LxcLimits, LxcUnixDevice } from '../../host/lxc/types.ts';
import { TerminalError } from '../runtime/index.ts';
import {
  diskRequestsOf,
  hostIdOf,
  hotplugSourcesOf,
  idmapSettingsOf,
  undelegatedRange,
  unixDeviceRequestsOf,
} from './device-specs.ts';
import { ensureSeccompProfile } from './ensure-seccomp-profile.ts';
import { ensureUnixDevices } from './ensure-unix-devices.ts';
import { computeLxcSpec } from './lxc-spec.ts';
import { resolveDisks } from './resolve-disks.ts';
import { resolveHwDevices } from './resolve-hw-devices.ts';
import { parseBool } from '../../util/parse-bool.ts';
import type { KnownIbPort } from './resolve-hw-devices.ts';
import { lxcNicsOf, resolveNics, type ResolvedNic } from './resolve-nics.ts';
import type { ContainerReconcilerDeps } from './types.ts';
import { devsvcDirOf, logDirOf, lxcPathOf } from '../../host/layout.ts';

export interface EnsuredLxcConfig {
  file: string;
  logFile: string;
  consoleLogFile: string;
  /** There was no config file before: LXC cannot have started the container. */
  created: boolean;
  /** The parts a running container takes without a restart (ensure-live.ts). */
  live: {
    limits: LxcLimits;
    disks: (LxcDiskMount & { device: string })[];
    unixDevices: (LxcUnixDevice & { device: string })[];
    nics: ResolvedNic[];
    /** Host paths whose change reconciles the running container: optional unix nodes, USB node directories. */
    hotplug: string[];
  };
  /** infiniband device → the port it resolved to (recorded in the facts: `knownIb` next time). */
  infiniband: Record<string, KnownIbPort>;
}

/** A pure step that can only fail because of the container's own settings: its error is terminal. */
function terminal<T>(what: string, f: () => T): T {
  try {
    return f();
  } catch (e) {
    throw new TerminalError(`${what}: ${(e as Error).message}`, { cause: e });
  }
}

/**
 * Render the container's LXC config from its expanded config and devices, with everything it refers
 * to resolved on the host (bridges, custom volumes, host paths, device nodes, the seccomp policy
 * file), and write it when it changed. It takes effect at the next start. Everything lives under
 * `<lxcPath>/<id>/` (config, seccomp, devices/), which the container's root must be able to
 * traverse (mode 0711); the reconciler's teardown removes that directory.
 */
export async function ensureLxcConfig(
  deps: ContainerReconcilerDeps,
  c: ContainerRow,
  config: Record<string, string>,
  devices: Record<string, Record<string, string>>,
  rootfs: string,
  signal?: AbortSignal,
  knownIb?: Record<string, KnownIbPort>,
): Promise<EnsuredLxcConfig> {
  const dir = path.join(lxcPathOf(deps.stateDir), c.id);
  const logDir = logDirOf(deps.stateDir, c);
  await deps.containerFiles.ensureDir(logDir, 0o700);
  await deps.containerFiles.ensureDir(dir, 0o711);

  // Profiles may have changed since the container was validated.
  terminal('devices', () => validateExpandedDevices(devices));
  const settings = idmapSettingsOf(config);
  const idmap: Idmap = terminal('idmap', () => computeIdmap({ ...deps.subids, ...settings, index: c.idmapIndex }));
  const rootUid = hostIdOf(idmap.uid, 0);
  const rootGid = hostIdOf(idmap.gid, 0);
  if (rootUid === undefined || rootGid === undefined)
    throw new TerminalError("idmap: the container's root (uid/gid 0) is not mapped");
  for (const [kind, ranges, delegated, file] of [
    ['uid', idmap.uid, deps.subids.subuid, '/etc/subuid'],
    ['gid', idmap.gid, deps.subids.subgid, '/etc/subgid'],
  ] as const) {
    const r = undelegatedRange(ranges, delegated);
    if (r) {
      const span = `${r.hostid}-${r.hostid + r.count - 1}`;
      throw new TerminalError(
        `raw.id_map: host ${kind}s ${span} are not delegated to root in ${file} (LXC maps ids through new${kind}map; add "root:${r.hostid}:${r.count}" to ${file} and restart svcd)`,
      );
    }
  }

  const nics = await resolveNics(deps.db, devices, c.id, config, deps.hostDevices);
  const disks = await resolveDisks(
    deps,
    diskRequestsOf(devices),
    settings.privileged
      ? { host: deps.hostDevices }
      : { host: deps.hostDevices, unprivilegedRoot: { uid: rootUid, gid: rootGid } },
  );
  const mustExist = c.power !== 'stopped';
  const hw = await resolveHwDevices({ devices, host: deps.hostDevices, mustExist, known: knownIb });
  const unixDevices = await ensureUnixDevices({
    nodes: deps.deviceNodes,
    dir: path.join(dir, 'devices'),
    requests: [...unixDeviceRequestsOf(devices), ...hw.requests],
    idmap,
    mustExist,
    signal,
  });
  const seccompProfile = await ensureSeccompProfile(
    deps.containerFiles,
    path.join(dir, 'seccomp'),
    config,
    c.architecture,
  );
  // nvidia.runtime: the tooling the API saw at the write may have gone since; a container to stay stopped waits.
  const nvidia = parseBool(config['nvidia.runtime']) ? deps.hostDevices.nvidiaTooling() : undefined;
  if (nvidia && 'missing' in nvidia && mustExist)
    throw new TerminalError(
      `nvidia.runtime: needs the NVIDIA container tooling, which this host lacks: ${nvidia.missing}`,
    );

  const spec = terminal('config', () =>
    computeLxcSpec({
      hostname: c.name,
      architecture: c.architecture,
      rootfsPath: rootfs,
      config,
      idmap,
      host: deps.host,
      logFile: path.join(logDir, 'lxc.log'),
      consoleLogFile: path.join(logDir, 'console.log'),
      seccompProfile,
      nics: lxcNicsOf(nics),
      disks,
      unixDevices,
      devsvcDir: devsvcDirOf(deps.stateDir, c.id),
      nvidiaHook: nvidia && 'hook' in nvidia ? nvidia.hook : undefined,
    }),
  );
  const file = path.join(dir, 'config');
  // Looked at every time: lxcfs may be started (or stopped) while svcd runs.
  const lxcfs = deps.hostDevices.hasLxcfs();
  const written = await deps.containerFiles.writeIfChanged(
    file,
    terminal('LXC config', () => renderLxcConfig({ ...spec, lxcfs })),
  );
  return {
    file,
    logFile: spec.logFile!,
    consoleLogFile: spec.consoleLogFile!,
    created: written === 'created',
    live: {
      limits: spec.limits ?? {},
      disks,
      unixDevices,
      nics,
      hotplug: [...hotplugSourcesOf(devices), ...hw.watch].sort(),
    },
    infiniband: hw.infiniband,
  };
}
