import type { Idmap, Range, RawIdmapEntry, SubidRange } from './types.ts';
import { IdmapError } from '../../util/idmap-error.ts';
import { parseRawIdmap } from '../../util/parse-raw-idmap.ts';

/** `security.idmap.size` when unset; also the size of the shared block every non-isolated container uses. */
export const DEFAULT_IDMAP_SIZE = 65536;
/** The kernel accepts at most this many lines per uid_map/gid_map (since Linux 4.15). */
export const MAX_IDMAP_LINES = 340;

export interface ComputeIdmapInput {
  /** root's ranges from /etc/subuid (`parseSubids`). */
  subuid: readonly SubidRange[];
  /** root's ranges from /etc/subgid. */
  subgid: readonly SubidRange[];
  /** `security.privileged`: no user namespace, so no map (and `raw.id_map` is ignored, as in LXD). */
  privileged: boolean;
  /** `security.idmap.isolated`: a block of its own instead of the shared one; needs `index`. */
  isolated?: boolean;
  /** `security.idmap.size` (default 65536). */
  size?: number;
  /** `security.idmap.base`: the first host id, overriding both the shared block and the isolated allocation. */
  base?: number;
  /** `raw.id_map` text (`uid|gid|both HOST[-END] NS[-END]` lines). */
  rawIdmap?: string;
  /**
   * The container's isolated block number, allocated by the caller (0, 1, 2 ...; unique among isolated
   * containers). Block i starts at `rangeStart + 65536 + i * size`: the first 65536 ids of the range are
   * the shared block, so isolated containers never overlap non-isolated ones. Containers with different
   * sizes must be given indexes whose blocks do not overlap.
   */
  index?: number;
}

type Kind = 'uid' | 'gid';
const fileOf = (kind: Kind) => (kind === 'uid' ? '/etc/subuid' : '/etc/subgid');
const span = (start: number, count: number) => `${start}-${start + count - 1}`;
const describeRanges = (ranges: readonly SubidRange[]) => ranges.map((r) => span(r.start, r.count)).join(', ');
const overlaps = (a0: number, an: number, b0: number, bn: number) => a0 < b0 + bn && b0 < a0 + an;

function checkCount(what: string, v: number | undefined, min: number): void {
  if (v !== undefined && (!Number.isSafeInteger(v) || v < min))
    throw new IdmapError(`${what} must be an integer >= ${min}, got ${v}`);
}

/** The host id the container's ns id 0 maps to, validated against root's delegated ranges. */
function hostStart(kind: Kind, ranges: readonly SubidRange[], size: number, input: ComputeIdmapInput): number {
  const file = fileOf(kind);
  if (ranges.length === 0) {
    throw new IdmapError(
      `root has no ${kind} range in ${file}; unprivileged containers need one (e.g. "root:1000000:1000000000")`,
    );
  }
  if (input.base !== undefined) {
    const fits = ranges.some((r) => r.start <= input.base! && input.base! + size <= r.start + r.count);
    if (!fits) {
      throw new IdmapError(
        `security.idmap.base=${input.base} with security.idmap.size=${size} needs host ${kind}s ${span(input.base, size)}, which is not inside root's ${file} range(s) ${describeRanges(ranges)}`,
      );
    }
    return input.base;
  }
  if (input.isolated) {
    const index = input.index;
    if (index === undefined) throw new IdmapError('security.idmap.isolated needs a block index for the container');
    const main = ranges[0]!;
    const start = main.start + DEFAULT_IDMAP_SIZE + index * size;
    if (start + size > main.start + main.count) {
      const room = Math.max(0, Math.floor((main.count - DEFAULT_IDMAP_SIZE) / size));
      throw new IdmapError(
        `security.idmap.isolated: block ${index} of ${size} ${kind}s needs host ${kind}s ${span(start, size)}, past the end of root's ${file} range ${span(main.start, main.count)} (room for ${room} isolated block(s) of this size)`,
      );
    }
    return start;
  }
  const fit = ranges.find((r) => r.count >= size);
  if (!fit) {
    throw new IdmapError(
      `security.idmap.size=${size} does not fit in root's ${file} range(s) ${describeRanges(ranges)}: none holds ${size} ${kind}s`,
    );
  }
  return fit.start;
}

/** Remove ns ids [n0, n0+nn) from `r`, keeping each remaining id's host id (LXD's AddSafe split). */
function punch(r: Range, n0: number, nn: number): Range[] {
  if (!overlaps(r.nsid, r.count, n0, nn)) return [r];
  const out: Range[] = [];
  if (n0 > r.nsid) out.push({ nsid: r.nsid, hostid: r.hostid, count: n0 - r.nsid });
  const end = r.nsid + r.count;
  const holeEnd = n0 + nn;
  if (holeEnd < end) out.push({ nsid: holeEnd, hostid: r.hostid + (holeEnd - r.nsid), count: end - holeEnd });
  return out;
}

function mapFor(
  kind: Kind,
  ranges: readonly SubidRange[],
  size: number,
  raw: readonly RawIdmapEntry[],
  input: ComputeIdmapInput,
): Range[] {
  const start = hostStart(kind, ranges, size, input);
  const extra = raw.filter((e) => e.kind === kind || e.kind === 'both');
  for (const [i, e] of extra.entries()) {
    if (overlaps(e.hostid, e.count, start, size)) {
      throw new IdmapError(
        `raw.id_map: host ${kind}s ${span(e.hostid, e.count)} overlap the container's own map (host ${kind}s ${span(start, size)}); map ids from outside it`,
      );
    }
    for (const o of extra.slice(0, i)) {
      if (overlaps(e.nsid, e.count, o.nsid, o.count)) {
        throw new IdmapError(
          `raw.id_map: container ${kind}s ${span(e.nsid, e.count)} and ${span(o.nsid, o.count)} overlap`,
        );
      }
      if (overlaps(e.hostid, e.count, o.hostid, o.count)) {
        throw new IdmapError(
          `raw.id_map: host ${kind}s ${span(e.hostid, e.count)} and ${span(o.hostid, o.count)} overlap`,
        );
      }
    }
  }
  let main: Range[] = [{ nsid: 0, hostid: start, count: size }];
  for (const e of extra) main = main.flatMap((r) => punch(r, e.nsid, e.count));
  const out = [...main, ...extra.map((e) => ({ nsid: e.nsid, hostid: e.hostid, count: e.count }))].sort(
    (a, b) => a.nsid - b.nsid,
  );
  if (out.length > MAX_IDMAP_LINES)
    throw new IdmapError(`the ${kind} map needs ${out.length} lines; the kernel accepts at most ${MAX_IDMAP_LINES}`);
  return out;
}

/**
 * A container's uid/gid maps with LXD's semantics: privileged → none; unprivileged → the shared block
 * (the first `size` ids of root's range), an isolated block of its own, or one starting at
 * `security.idmap.base`; `raw.id_map` entries punch holes into it. Pure; throws IdmapError when a range
 * does not fit.
 */
export function computeIdmap(input: ComputeIdmapInput): Idmap {
  if (input.privileged) return { uid: [], gid: [] };
  checkCount('security.idmap.size', input.size, 1);
  checkCount('security.idmap.base', input.base, 0);
  checkCount('the isolated block index', input.index, 0);
  const size = input.size ?? DEFAULT_IDMAP_SIZE;
  const raw = input.rawIdmap ? parseRawIdmap(input.rawIdmap) : [];
  return { uid: mapFor('uid', input.subuid, size, raw, input), gid: mapFor('gid', input.subgid, size, raw, input) };
}
