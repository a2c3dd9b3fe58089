/** One contiguous id range delegated to a user in /etc/subuid or /etc/subgid. */
export interface SubidRange {
  start: number;
  count: number;
}

/** One line of a user-namespace id map: `count` ids from `nsid` inside map to `hostid` on the host. */
export interface Range {
  nsid: number;
  hostid: number;
  count: number;
}

/** A container's uid and gid maps, each sorted by `nsid`. Both empty for a privileged container. */
export interface Idmap {
  uid: Range[];
  gid: Range[];
}

export type { RawIdmapEntry } from '../../util/parse-raw-idmap.ts';
