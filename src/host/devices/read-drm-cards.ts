import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { listDir, readAttr, readDevNumbers, type SysfsNode, type SysfsRoots } from './sysfs-roots.ts';

/** One GPU as the kernel's DRM shows it: `/sys/class/drm/card<id>`. */
export interface DrmCard {
  id: number;
  /** PCI address (the `device` link's target name), e.g. 0000:01:00.0. */
  pci: string;
  /** Lower-case hex without 0x. */
  vendorid: string;
  productid: string;
  /** /dev/dri/card<id> and its render node(s). */
  nodes: SysfsNode[];
}

const hex = (v: string | undefined) => (v ?? '').replace(/^0x/i, '').toLowerCase();

/** The DRM cards of the host, by id; none without /sys/class/drm. */
export async function readDrmCards(roots: SysfsRoots): Promise<DrmCard[]> {
  const cls = path.join(roots.sysRoot, 'class', 'drm');
  const out: DrmCard[] = [];
  for (const name of await listDir(cls)) {
    const m = /^card(\d+)$/.exec(name);
    if (!m) continue;
    const dev = await realpath(path.join(cls, name, 'device')).catch(() => undefined);
    const numbers = await readDevNumbers(path.join(cls, name, 'dev'));
    if (!dev || !numbers) continue;
    const nodes: SysfsNode[] = [{ path: path.join(roots.devRoot, 'dri', name), ...numbers }];
    for (const sub of (await listDir(path.join(dev, 'drm'))).sort()) {
      if (!/^renderD\d+$/.test(sub)) continue;
      const n = await readDevNumbers(path.join(dev, 'drm', sub, 'dev'));
      if (n) nodes.push({ path: path.join(roots.devRoot, 'dri', sub), ...n });
    }
    out.push({
      id: Number(m[1]),
      pci: path.basename(dev),
      vendorid: hex(await readAttr(path.join(dev, 'vendor'))),
      productid: hex(await readAttr(path.join(dev, 'device'))),
      nodes,
    });
  }
  return out.sort((a, b) => a.id - b.id);
}
