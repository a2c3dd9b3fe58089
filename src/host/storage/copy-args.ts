import { parseSize } from '../../util/size.ts';
/** Pure argv builders for copying directory trees (rsync, cp). */

/**
 * The `--bwlimit` value for a pool's `rsync.bwlimit` (bytes per second): a bare number is passed as is
 * (rsync reads it as KiB/s, as LXD does); a number with a unit (`10MB`, `50MiB`, `10 MB`) is converted to
 * whole KiB/s (at least 1), which every rsync version understands. `0` means no limit.
 */
export function bwlimitArg(bwlimit: string): string {
  const v = bwlimit.trim();
  if (/^\d+$/.test(v)) return v;
  try {
    const bytes = parseSize(v);
    return bytes === 0 ? '0' : String(Math.max(1, Math.ceil(bytes / 1024)));
  } catch {
    throw new RangeError(`invalid rsync.bwlimit ${JSON.stringify(bwlimit)}: expected a rate such as 10MB (per second)`);
  }
}

/**
 * `rsync -aHAX --numeric-ids --delete [--checksum] [--bwlimit=N] src/ dst/`: make dst's content exactly src's
 * (hard links, ACLs, xattrs and raw uid/gid kept; files not in src deleted). `checksum` compares content
 * instead of size+mtime: needed when dst already holds files (a restore), where a file changed within the
 * same second as the snapshot, or with its mtime put back, would otherwise be skipped.
 */
export function rsyncArgs(opts: {
  src: string;
  dst: string;
  bwlimit?: string | undefined;
  checksum?: boolean | undefined;
}): string[] {
  const args = ['-aHAX', '--numeric-ids', '--delete'];
  if (opts.checksum) args.push('--checksum');
  if (opts.bwlimit !== undefined && opts.bwlimit.trim() !== '') args.push(`--bwlimit=${bwlimitArg(opts.bwlimit)}`);
  args.push(`${trimSlash(opts.src)}/`, `${trimSlash(opts.dst)}/`);
  return args;
}

/** `cp -a --reflink=auto src/. dst/`: copy src's content into the (existing, empty) dst, sharing extents where the fs can. */
export function cpArgs(opts: { src: string; dst: string }): string[] {
  return ['-a', '--reflink=auto', `${trimSlash(opts.src)}/.`, `${trimSlash(opts.dst)}/`];
}

function trimSlash(p: string): string {
  return p.length > 1 ? p.replace(/\/+$/, '') : p;
}
