/**
 * The argv of the two rsync processes of one migration session, as LXD 5.0's lxd/rsync/rsync.go builds
 * them, so an LXD peer on the other end of the websocket speaks to them unchanged. Roles never swap:
 * the side that has the data runs the rsync client (a sender that believes it talks to
 * `localhost:/tmp/foo` through `-e`); the receiving side runs `rsync --server` with the path that
 * really counts.
 */

/**
 * LXD's three, and svcd's own `xxh128` (rsyncFeatures field 1000, offered only by svcd): rsync's whole-file and
 * block checksums in xxh128 instead of the MD5 that LXD's fixed server argv (no `v` in `-e.iLsfx`, so no
 * checksum negotiation) leaves both rsyncs with. MD5 was most of both rsyncs' CPU time in a transfer.
 */
export type RsyncFeature = 'xattrs' | 'delete' | 'compress' | 'xxh128';

/** The flags each agreed feature adds, identical on both sides (rsync rejects a mismatch mid-stream). */
export function rsyncFeatureArgs(features: readonly RsyncFeature[], opts: { skipSelinuxXattrs: boolean }): string[] {
  const args: string[] = [];
  if (features.includes('xattrs')) {
    args.push('--xattrs');
    // LXD adds this when its rsync is at least 3.1.3: a relabelled host must not rewrite the label
    if (opts.skipSelinuxXattrs) args.push('--filter=-x security.selinux');
  }
  if (features.includes('delete')) args.push('--delete');
  if (features.includes('compress')) args.push('--compress', '--compress-level=2');
  if (features.includes('xxh128')) args.push('--checksum-choice=xxh128');
  return args;
}

/** Whether `rsync --version` lists xxh128 among its checksums (rsync 3.2 or later, built with xxhash). */
export function rsyncHasXxh128(versionOutput: string): boolean {
  const m = /Checksum list:\s*\n\s*([^\n]*)/.exec(versionOutput);
  return !!m && m[1]!.split(/\s+/).includes('xxh128');
}

/** Whether `rsync --version`'s first line names 3.1.3 or later (LXD's condition for the selinux filter). */
export function rsyncSkipsSelinuxXattrs(versionOutput: string): boolean {
  const m = /version\s+(\d+)\.(\d+)\.(\d+)/.exec(versionOutput.split('\n')[0] ?? '');
  if (!m) return false;
  const [maj, min, patch] = [Number(m[1]), Number(m[2]), Number(m[3])];
  return maj !== 3 ? maj > 3 : min !== 1 ? min > 1 : patch >= 3;
}

const SOCKET_PATH = /^\/[A-Za-z0-9._/-]{1,100}$/;

/**
 * The `-e` command: rsync runs it (appending `localhost rsync --server …`, which `sh -c` drops as
 * positional parameters) and speaks over its stdio, which socat joins to the unix socket svcd
 * listens on (a path in a private directory: the spawn helper's children may not share svcd's network
 * namespace, where abstract sockets live) and copies to the websocket. rsync itself splits this string
 * (quotes honoured); the path is restricted to a safe alphabet so it cannot leave its quotes.
 * `-t 0.01`: a session ends with the socket's EOF (the receiver has exited), and rsync only closes its end
 * once socat has exited (it waits for its `-e` child first), so socat's default half-close wait of 0.5 s was
 * spent on every session (4 of a container with 3 snapshots). By then rsync has written its last message
 * (its final NDX_DONE, which the receiver reads before it exits), and what socat already read is delivered
 * before the EOF.
 */
export function socketRsh(socketPath: string): string {
  if (!SOCKET_PATH.test(socketPath) || socketPath.includes('..'))
    throw new TypeError(`invalid socket path: ${socketPath}`);
  return `sh -c "exec socat -t 0.01 -b 262144 - UNIX-CONNECT:${socketPath}"`;
}

export interface RsyncSendOptions {
  /** The directory whose contents are sent. */
  sourcePath: string;
  features: readonly RsyncFeature[];
  skipSelinuxXattrs: boolean;
  /** rsync's --bwlimit value (LXD: the pool's rsync.bwlimit), absent for none. */
  bwlimit?: string;
  /** The `-e` command (socketRsh). */
  rsh: string;
}

/** The sending side's client argv (after `rsync`). */
export function rsyncSendArgs(o: RsyncSendOptions): string[] {
  const args = ['-ar', '--devices', '--numeric-ids', '--partial', '--sparse'];
  if (o.bwlimit) args.push('--bwlimit', o.bwlimit);
  args.push(...rsyncFeatureArgs(o.features, o));
  // the trailing slash sends the directory's contents, not the directory; /tmp/foo is ignored by the server
  args.push(o.sourcePath.endsWith('/') ? o.sourcePath : `${o.sourcePath}/`, 'localhost:/tmp/foo', '-e', o.rsh);
  return args;
}

export interface RsyncReceiveOptions {
  /** The directory the data lands in. */
  targetPath: string;
  features: readonly RsyncFeature[];
  skipSelinuxXattrs: boolean;
  /**
   * A tree already received (the snapshot before) that unchanged files come from instead of the wire:
   * `link`, hard links to its files (read-only snapshots only, never a volume that is written to); `copy`,
   * local copies of them. Receiver-side options only, which the sender never learns of (LXD's too).
   */
  basis?: { dir: string; mode: 'link' | 'copy' } | undefined;
}

/** The receiving side's server argv (after `rsync`): stdin/stdout are the fs websocket. */
export function rsyncReceiveArgs(o: RsyncReceiveOptions): string[] {
  return [
    '--server',
    '-vlogDtpre.iLsfx',
    '--numeric-ids',
    '--devices',
    '--partial',
    '--sparse',
    ...rsyncFeatureArgs(o.features, o),
    ...(o.basis ? [`--${o.basis.mode}-dest=${o.basis.dir}`] : []),
    '.',
    o.targetPath,
  ];
}
