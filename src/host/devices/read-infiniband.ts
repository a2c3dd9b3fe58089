/**
 * InfiniBand in sysfs: the device and port behind an IPoIB interface (`/sys/class/net/<if>/device/infiniband/<ibdev>`,
 * its `dev_port` + 1), and the character devices userspace uses on them (`/dev/infiniband/<name>`): the device's
 * verbs node (`/sys/class/infiniband_verbs/uverbsN`, by `ibdev`) and the port's management nodes
 * (`/sys/class/infiniband_mad/umadN` and `issmN`, by `ibdev` and `port`).
 */
import path from 'node:path';
import { listDir, readAttr, readDevNumbers, type SysfsNode, type SysfsRoots } from './sysfs-roots.ts';

/** An InfiniBand device's port. */
export interface IbPort {
  ibdev: string;
  port: number;
}

/** Whether the host has any InfiniBand device. */
export const hasInfiniband = async (roots: SysfsRoots): Promise<boolean> =>
  (await listDir(path.join(roots.sysRoot, 'class', 'infiniband'))).length > 0;

/** The device and port of IPoIB interface `ifname` on the host; undefined when it is not one (or not on the host). */
export async function readIbPortOf(roots: SysfsRoots, ifname: string): Promise<IbPort | undefined> {
  const dir = path.join(roots.sysRoot, 'class', 'net', ifname);
  const [ibdev] = (await listDir(path.join(dir, 'device', 'infiniband'))).sort();
  if (!ibdev) return undefined;
  const devPort = Number((await readAttr(path.join(dir, 'dev_port'))) ?? '0');
  return { ibdev, port: (Number.isInteger(devPort) && devPort >= 0 ? devPort : 0) + 1 };
}

/** The verbs nodes of the port's device and the management nodes (umad, issm) of the port itself. */
export async function readIbNodes(roots: SysfsRoots, p: IbPort): Promise<{ verbs: SysfsNode[]; mad: SysfsNode[] }> {
  const find = async (cls: string, byPort: boolean) => {
    const base = path.join(roots.sysRoot, 'class', cls);
    const out: SysfsNode[] = [];
    for (const n of (await listDir(base)).sort()) {
      if ((await readAttr(path.join(base, n, 'ibdev'))) !== p.ibdev) continue;
      if (byPort && Number(await readAttr(path.join(base, n, 'port'))) !== p.port) continue;
      const numbers = await readDevNumbers(path.join(base, n, 'dev'));
      if (numbers) out.push({ path: path.join(roots.devRoot, 'infiniband', n), ...numbers });
    }
    return out;
  };
  return { verbs: await find('infiniband_verbs', false), mad: await find('infiniband_mad', true) };
}
