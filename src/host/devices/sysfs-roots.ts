import { readdir, readFile } from 'node:fs/promises';

/** Where the host's sysfs and device nodes are: `/sys` and `/dev`, a fake tree in tests. */
export interface SysfsRoots {
  sysRoot: string;
  devRoot: string;
}

export const HOST_SYSFS: SysfsRoots = { sysRoot: '/sys', devRoot: '/dev' };

/** A host char device found in sysfs: the node's path under `devRoot` and its numbers from the `dev` attribute. */
export interface SysfsNode {
  path: string;
  major: number;
  minor: number;
}

/** A sysfs attribute, trimmed; undefined when absent. */
export const readAttr = (p: string): Promise<string | undefined> =>
  readFile(p, 'utf8').then(
    (s) => s.trim(),
    () => undefined,
  );

/** Entries of a sysfs directory; none when it does not exist. */
export const listDir = (p: string): Promise<string[]> => readdir(p).catch(() => [] as string[]);

/** `major:minor` of a sysfs `dev` attribute. */
export async function readDevNumbers(devAttr: string): Promise<{ major: number; minor: number } | undefined> {
  const m = /^(\d+):(\d+)$/.exec((await readAttr(devAttr)) ?? '');
  return m ? { major: Number(m[1]), minor: Number(m[2]) } : undefined;
}
