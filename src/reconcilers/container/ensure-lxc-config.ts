import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { ContainerRow } from '../../desired/schema/index.ts';
import { computeIdmap } from '../../host/idmap/compute-idmap.ts';
import { renderLxcConfig } from '../../host/lxc/render-config.ts';
import type { LxcDiskMount, LxcNic } from '../../host/lxc/types.ts';
import { computeLxcSpec } from './lxc-spec.ts';
import { logDirOf, lxcPathOf, type ContainerReconcilerDeps } from './types.ts';

/** Render the LXC config and write it when it changed (it takes effect at the next start). */
export async function ensureLxcConfig(deps: ContainerReconcilerDeps, c: ContainerRow, config: Record<string, string>, devices: Record<string, Record<string, string>>, rootfs: string): Promise<{ file: string; logFile: string }> {
  const { stateDir } = deps;
  const lxcPath = lxcPathOf(stateDir);
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
