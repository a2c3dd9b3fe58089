/**
 * Simplestreams `streams/v1/index.json` (format index:1.0): which products files hold image
 * downloads. Only entries with datatype `image-downloads` and at least one product count, as in
 * LXD's shared/simplestreams.
 */
export function parseStreamIndex(json: unknown, what: string): string[] {
  if (!isObject(json) || !isObject(json.index))
    throw new Error(`${what} is not a simplestreams index (no "index" object)`);
  const paths: string[] = [];
  for (const entry of Object.values(json.index)) {
    if (!isObject(entry) || entry.datatype !== 'image-downloads') continue;
    if (!Array.isArray(entry.products) || entry.products.length === 0) continue;
    if (typeof entry.path !== 'string' || entry.path === '')
      throw new Error(`${what}: an image-downloads entry has no path`);
    paths.push(entry.path);
  }
  return paths;
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
