import { readFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * Whether host interface `parent` has SR-IOV virtual functions enabled, from
 * /sys/class/net/<parent>/device/sriov_totalvfs and sriov_numvfs; `missing` names what is absent.
 */
export async function readSriov(
  parent: string,
  { sysRoot = '/sys' }: { sysRoot?: string } = {},
): Promise<{ ok: boolean; missing?: string }> {
  const dir = path.join(sysRoot, 'class/net', parent, 'device');
  const read = (f: string) =>
    readFile(path.join(dir, f), 'utf8').then(
      (s) => Number(s.trim()),
      () => undefined,
    );
  const total = await read('sriov_totalvfs');
  if (total === undefined)
    return { ok: false, missing: `no ${path.join(dir, 'sriov_totalvfs')} (the device has no SR-IOV capability)` };
  if (!(total > 0)) return { ok: false, missing: `${path.join(dir, 'sriov_totalvfs')} is 0 (no virtual functions)` };
  const num = await read('sriov_numvfs');
  if (!num)
    return {
      ok: false,
      missing: `no virtual functions enabled (${path.join(dir, 'sriov_numvfs')} is ${num ?? 'absent'}, of ${total})`,
    };
  return { ok: true };
}
