import { IdmapError } from './idmap-error.ts';

/** One `raw.id_map` line: which maps it applies to and the range it maps. */
export interface RawIdmapEntry {
  kind: 'uid' | 'gid' | 'both';
  hostid: number;
  nsid: number;
  count: number;
}

const MAX_ID = 2 ** 32 - 2;

function parseIds(text: string, line: string): { start: number; count: number } {
  const m = /^(\d+)(?:-(\d+))?$/.exec(text);
  if (!m) throw new IdmapError(`raw.id_map: bad id "${text}" in "${line}"`);
  const start = Number(m[1]);
  const end = m[2] === undefined ? start : Number(m[2]);
  if (end < start) throw new IdmapError(`raw.id_map: range "${text}" ends before it starts in "${line}"`);
  if (end > MAX_ID) throw new IdmapError(`raw.id_map: id ${end} is past the largest id ${MAX_ID} in "${line}"`);
  return { start, count: end - start + 1 };
}

/**
 * Parse LXD's `raw.id_map`: one `uid|gid|both HOST[-END] NS[-END]` per line (ranges inclusive, both
 * sides the same length). Blank lines and `#` comments are skipped.
 */
export function parseRawIdmap(text: string): RawIdmapEntry[] {
  const out: RawIdmapEntry[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const fields = line.split(/\s+/);
    const kind = fields[0];
    if (fields.length !== 3 || (kind !== 'uid' && kind !== 'gid' && kind !== 'both')) {
      throw new IdmapError(`raw.id_map: bad line "${line}" (want "uid|gid|both HOSTID[-END] NSID[-END]")`);
    }
    const host = parseIds(fields[1]!, line);
    const ns = parseIds(fields[2]!, line);
    if (host.count !== ns.count) {
      throw new IdmapError(
        `raw.id_map: "${line}" maps ${host.count} host ids onto ${ns.count} container ids (the ranges must be the same length)`,
      );
    }
    out.push({ kind, hostid: host.start, nsid: ns.start, count: host.count });
  }
  return out;
}
