import type { Context } from 'hono';
import { HttpError } from './errors.ts';
import { compileFilter } from './filter.ts';

/** `recursion` 0/1, or 2 where `max` allows it (other collections treat 2 as 1). */
export function recursionOf(c: Context, max: 1 | 2 = 1): 0 | 1 | 2 {
  const raw = c.req.query('recursion');
  if (raw === undefined || raw === '') return 0;
  if (!/^\d+$/.test(raw)) throw new HttpError(400, `Invalid recursion value "${raw}": expected 0, 1 or 2`);
  const n = Number(raw);
  if (n === 0) return 0;
  return n >= 2 && max === 2 ? 2 : 1;
}

/**
 * Render a collection per `recursion` and `filter=`: URLs at 0, objects at 1 (and 2).
 * The filter applies to the rendered objects at every level.
 */
export async function renderCollection<T>(
  c: Context,
  items: T[],
  opts: {
    url: (item: T) => string;
    render: (item: T, recursion: 1 | 2) => unknown | Promise<unknown>;
    maxRecursion?: 1 | 2;
  },
): Promise<unknown[]> {
  const recursion = recursionOf(c, opts.maxRecursion ?? 1);
  const filter = compileFilter(c.req.query('filter'));
  if (recursion === 0 && !filter) return items.map(opts.url);
  const objects = await Promise.all(
    items.map(async (i) => ({ item: i, obj: await opts.render(i, recursion === 0 ? 1 : recursion) })),
  );
  const kept = filter ? objects.filter((o) => filter(o.obj)) : objects;
  return recursion === 0 ? kept.map((o) => opts.url(o.item)) : kept.map((o) => o.obj);
}
