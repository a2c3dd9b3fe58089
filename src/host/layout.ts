/**
 * Where svcd keeps things on the host, under its state directory: pure path arithmetic, the one
 * place that knows the layout. Everything else asks here (nothing joins state-dir paths by hand).
 * What lies inside a storage pool is the drivers' business (`storage/pool-layout.ts`).
 */
import path from 'node:path';
import type { PoolSpec } from './storage/types.ts';

/** LXC's lxcpath: one directory per container id (its config, its LXC log, its console log). */
export const lxcPathOf = (stateDir: string) => path.join(stateDir, 'containers');

/** A container's API-visible log directory (exec output records, `lxc info --show-log`). */
export const logDirOf = (stateDir: string, c: { project: string; name: string }) =>
  path.join(stateDir, 'logs', `${c.project}_${c.name}`);

/** Every container's log directory lives under this one. */
export const logsRootOf = (stateDir: string) => path.join(stateDir, 'logs');

/** What a storage driver needs to find a pool. */
export function poolSpecOf(
  row: {
    name: string;
    driver: string;
    config: Record<string, string>;
    memberConfig?: Record<string, Record<string, string>>;
  },
  stateDir: string,
  /** The member whose host this is: its own `source` and `size`, given when it joined, replace the pool's. */
  node: string,
): PoolSpec {
  const own = row.memberConfig?.[node];
  if (own && Object.keys(own).length) {
    // A source of its own is the user's: it is used as it is (volatile.initial_source marks a given one).
    const config = { ...row.config, ...own, ...(own.source ? { 'volatile.initial_source': own.source } : {}) };
    return { name: row.name, driver: row.driver, config: memberSource({ ...row, config }, stateDir), stateDir };
  }
  return { name: row.name, driver: row.driver, config: memberSource(row, stateDir), stateDir };
}

/**
 * A source svcd chose itself (no `volatile.initial_source`: the user gave none) is the default place under
 * the state directory of the member that created the pool; every member of a cluster keeps the pool at that
 * place under its own state directory instead. A source the user gave is used as it is.
 */
function memberSource(row: { name: string; driver: string; config: Record<string, string> }, stateDir: string) {
  const src = row.config.source;
  if (!src || row.config['volatile.initial_source']) return row.config;
  if (row.driver === 'dir' && src.endsWith(`/storage-pools/${row.name}`))
    return { ...row.config, source: defaultPoolPath(stateDir, row.name) };
  if (row.driver === 'btrfs' && src.endsWith(`/disks/${row.name}.img`))
    return { ...row.config, source: loopFilePath(stateDir, row.name) };
  return row.config;
}

/** `<stateDir>/storage-pools/<name>`: a pool's directory when no source is given (and btrfs's mount point). */
export const defaultPoolPath = (stateDir: string, name: string) => path.join(stateDir, 'storage-pools', name);

/** `<stateDir>/disks/<name>.img`: a loop-backed pool's file. */
export const loopFilePath = (stateDir: string, name: string) => path.join(stateDir, 'disks', `${name}.img`);

/** `<stateDir>/images`: one set of files per fingerprint. */
export const imagesDirOf = (stateDir: string) => path.join(stateDir, 'images');

/** `<stateDir>/backups/<container id>`: a container's backup tarballs. */
export const backupDirOf = (stateDir: string, containerId: string) => path.join(stateDir, 'backups', containerId);

/** `<stateDir>/backups/<container id>/<backup id>.tar` (compression inside). */
export const backupFileOf = (stateDir: string, containerId: string, backupId: string) =>
  path.join(backupDirOf(stateDir, containerId), `${backupId}.tar`);

/** Where an uploaded backup waits until the reconciler has unpacked it. */
export const importFileOf = (stateDir: string, containerId: string) =>
  path.join(stateDir, 'backups', 'imports', `${containerId}.tar`);

/** Where every container's guest socket directory lives on the host. */
export const devsvcRootOf = (stateDir: string) => path.join(stateDir, 'devsvc');

/**
 * One directory per container, holding its socket `sock`. The directory (not the socket) is
 * bind-mounted into the container, so a socket created again in it (after a daemon restart) is
 * visible inside without touching the container's mounts.
 */
export const devsvcDirOf = (stateDir: string, id: string) => path.join(devsvcRootOf(stateDir), id);

/**
 * `<stateDir>/trash`: a removed container's directories (its LXC directory and its devsvc directory; its
 * log directory stays, readable through the API) are renamed here and removed in the background (host/storage/trash.ts); what a crash leaves
 * is swept at the next start.
 */
export const stateTrashOf = (stateDir: string) => path.join(stateDir, 'trash');

/** The API's unix socket. */
export const unixSocketOf = (stateDir: string) => path.join(stateDir, 'unix.socket');

/** Where every managed network's directory lives. */
export const networksRootOf = (stateDir: string) => path.join(stateDir, 'networks');

/** `<stateDir>/networks/<name>`: one managed network's dnsmasq config, pid file, leases and DHCP hosts directory. */
export const networkDirOf = (stateDir: string, name: string) => path.join(networksRootOf(stateDir), name);

/** `<stateDir>/containers/<id>/proxy`: the pid files of a container's proxy forwarders (`<device>.pid`). */
export const proxyDirOf = (stateDir: string, id: string) => path.join(lxcPathOf(stateDir), id, 'proxy');

/** The bridges whose route_localnet svcd turned on for proxy nat rules (one empty file per bridge). */
export const proxyNatMarkerDirOf = (stateDir: string) => path.join(stateDir, 'proxy-nat', 'route-localnet');
