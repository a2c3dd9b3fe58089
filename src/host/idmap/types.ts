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

/** One `raw.id_map` line: which maps it applies to and the range it maps. */
export interface RawIdmapEntry {
  kind: 'uid' | 'gid' | 'both';
  hostid: number;
  nsid: number;
  count: number;
}
