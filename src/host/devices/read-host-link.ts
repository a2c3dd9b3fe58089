import { access } from 'node:fs/promises';
import path from 'node:path';

const exists = (p: string) =>
  access(p).then(
    () => true,
    () => false,
  );

/** Whether a host network interface exists and is a bridge (from /sys, no process spawned). */
export async function readHostLink(
  name: string,
  { sysRoot = '/sys' }: { sysRoot?: string } = {},
): Promise<'bridge' | 'other' | undefined> {
  if (name === '' || name === '.' || name === '..' || name.includes('/')) return undefined;
  const dir = path.join(sysRoot, 'class/net', name);
  if (!(await exists(dir))) return undefined;
  return (await exists(path.join(dir, 'bridge'))) ? 'bridge' : 'other';
}
