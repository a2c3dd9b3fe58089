import type { SubidRange } from './types.ts';
import { IdmapError } from '../../util/idmap-error.ts';

/**
 * Parse /etc/subuid or /etc/subgid (`name:start:count` per line, shadow-utils format) and return the
 * ranges delegated to `user`, in file order. A line may name the user by login or by numeric id, so
 * pass `uid` to match both (root: `parseSubids(text, 'root', 0)`). Blank lines and `#` comments are
 * skipped; a malformed line for `user` throws (a silently ignored range would change every map).
 */
export function parseSubids(text: string, user = 'root', uid?: number): SubidRange[] {
  const names = new Set([user, ...(uid === undefined ? [] : [String(uid)])]);
  const out: SubidRange[] = [];
  for (const [i, raw] of text.split('\n').entries()) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const fields = line.split(':');
    if (!names.has(fields[0] ?? '')) continue;
    const [, start, count] = fields;
    if (fields.length !== 3 || !/^\d+$/.test(start ?? '') || !/^\d+$/.test(count ?? '')) {
      throw new IdmapError(`line ${i + 1} ("${line}"): want "${user}:START:COUNT"`);
    }
    const r = { start: Number(start), count: Number(count) };
    if (r.count === 0) continue;
    if (r.start + r.count > 2 ** 32 - 1)
      throw new IdmapError(`line ${i + 1} ("${line}"): range ends past the largest id 4294967294`);
    out.push(r);
  }
  return out;
}
