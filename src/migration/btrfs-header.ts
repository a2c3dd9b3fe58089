/**
 * The JSON header LXD sends on the fs channel before its btrfs streams when `migration_header` is agreed
 * (its BTRFSMetaDataHeader, lxd/storage/drivers/driver_btrfs_utils.go): the subvolumes to come, each
 * with the snapshot it belongs to ("" for the volume itself), its path inside the volume ("/" for the
 * root), whether it ends up read-only, and its uuid. Pure.
 */

export interface BtrfsSubvolume {
  path: string;
  snapshot: string;
  readonly: boolean;
  uuid: string;
}

/** The root of a volume or snapshot: nested subvolumes have their path below it. */
const ROOT = '/';

export function encodeBtrfsHeader(subvolumes: readonly BtrfsSubvolume[]): Uint8Array {
  return Buffer.from(
    JSON.stringify({
      subvolumes: subvolumes.map((s) => ({ path: s.path, snapshot: s.snapshot, readonly: s.readonly, uuid: s.uuid })),
    }),
  );
}

export function decodeBtrfsHeader(bytes: Uint8Array): BtrfsSubvolume[] {
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(bytes).toString('utf8'));
  } catch (e) {
    throw new Error(`invalid btrfs migration header: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (!v || typeof v !== 'object') throw new Error('invalid btrfs migration header: not an object');
  // Go marshals an empty list as null
  const list = (v as { subvolumes?: unknown }).subvolumes ?? [];
  if (!Array.isArray(list)) throw new Error('invalid btrfs migration header: subvolumes is not a list');
  return list.map((s: unknown, i) => {
    const o = (s ?? {}) as Record<string, unknown>;
    if (typeof o.path !== 'string' || typeof o.snapshot !== 'string')
      throw new Error(`invalid btrfs migration header: subvolume ${i} has no path or snapshot`);
    return {
      path: o.path,
      snapshot: o.snapshot,
      readonly: o.readonly === true,
      uuid: typeof o.uuid === 'string' ? o.uuid : '',
    };
  });
}

/**
 * The subvolumes svcd sends: each snapshot's root, read-only, oldest first, then the volume's, writable
 * (svcd's volumes hold no nested subvolumes it sends: it does not offer `header_subvolumes`). This is
 * also what LXD's sink assumes when no header is agreed.
 */
export function btrfsHeaderFor(snapshotNames: readonly string[]): BtrfsSubvolume[] {
  return [
    ...snapshotNames.map((snapshot) => ({ path: ROOT, snapshot, readonly: true, uuid: '' })),
    { path: ROOT, snapshot: '', readonly: false, uuid: '' },
  ];
}

/**
 * The streams to receive, in the order they come: for each snapshot wanted (oldest first) its root,
 * then the volume's root. Nested subvolumes are listed but never sent without `header_subvolumes`, which
 * svcd does not agree to, so they are skipped as LXD's sender skips them.
 */
export function planReceive(header: readonly BtrfsSubvolume[], snapshotNames: readonly string[]): string[] {
  const plan: string[] = [];
  for (const name of [...snapshotNames, '']) {
    const roots = header.filter((s) => s.snapshot === name && s.path === ROOT);
    if (roots.length !== 1)
      throw new Error(
        `the btrfs migration header lists ${roots.length} root subvolumes for ${name ? `snapshot "${name}"` : 'the volume'}, not one`,
      );
    plan.push(name);
  }
  return plan;
}
