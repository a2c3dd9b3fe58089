import type { Idmap } from './types.ts';

/** `lxc.idmap` config lines for a map: uid lines first, then gid lines, each in nsid order. */
export function renderIdmapLines(map: Idmap): string[] {
  const line = (k: 'u' | 'g') => (r: { nsid: number; hostid: number; count: number }) =>
    `lxc.idmap = ${k} ${r.nsid} ${r.hostid} ${r.count}`;
  return [...map.uid.map(line('u')), ...map.gid.map(line('g'))];
}
