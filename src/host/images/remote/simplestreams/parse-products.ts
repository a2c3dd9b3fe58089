import { architectureName } from './architecture-name.ts';
import { isObject } from './parse-stream-index.ts';

/** One file of a stream item: its path under the server root, the sha256 the stream publishes, its size. */
export interface StreamFile {
  path: string;
  ftype: string;
  /** '' when the stream publishes none (the fingerprint is still checked). */
  sha256: string;
  size: number;
}

/** One container image a products file offers, as LXD's Products.ToLXD derives it. */
export interface StreamImage {
  fingerprint: string;
  /** LXD's name (`x86_64`); the product's own spelling (`amd64`) is `properties.architecture`. */
  architecture: string;
  /** The product's aliases, each also as `<alias>/<product arch>` (LXD's short and medium forms). */
  aliases: string[];
  properties: Record<string, string>;
  serial: string;
  createdAt: Date;
  expiresAt?: Date | undefined;
  filename: string;
  /** The unified tarball, or the metadata tarball of a split image. */
  meta: StreamFile;
  rootfs?: StreamFile | undefined;
  size: number;
}

/** Root file types of split container images, in LXD's order of preference; a unified tarball comes last. */
export const ROOTFS_TYPES = ['squashfs', 'root.tar.xz'] as const;
const HEX64 = /^[0-9a-f]{64}$/;

/**
 * The container images of a products file (format products:1.0). A version whose name does not start
 * with a YYYYMMDD date is skipped (LXD dates images by it), as are unknown architectures, VM items and
 * items without a usable fingerprint. Fingerprints: a unified `lxd_combined.tar.gz` is its own sha256;
 * a split image's is published on its `lxd.tar.xz` item as `combined_squashfs_sha256` (squashfs root)
 * or `combined_rootxz_sha256`, else `combined_sha256` (root.tar.xz).
 */
export function parseProducts(json: unknown, what: string): StreamImage[] {
  if (!isObject(json) || !isObject(json.products))
    throw new Error(`${what} is not a simplestreams products file (no "products" object)`);
  const images: StreamImage[] = [];
  for (const product of Object.values(json.products)) {
    if (!isObject(product) || typeof product.arch !== 'string' || !isObject(product.versions)) continue;
    const architecture = architectureName(product.arch);
    if (!architecture) continue;
    const str = (k: string) => (typeof product[k] === 'string' ? (product[k] as string) : '');
    const names = str('aliases')
      .split(',')
      .map((a) => a.trim())
      .filter(Boolean);
    const aliases = [...names, ...names.map((a) => `${a}/${product.arch as string}`)];
    for (const [serial, version] of Object.entries(product.versions)) {
      const createdAt = serialDate(serial);
      if (!createdAt || !isObject(version) || !isObject(version.items)) continue;
      const items = Object.values(version.items).filter(isObject);
      const label = typeof version.label === 'string' ? version.label : '';
      const add = (meta: Record<string, unknown>, root: Record<string, unknown> | undefined, fingerprint: unknown) => {
        const metaFile = streamFile(meta);
        if (typeof fingerprint !== 'string' || !HEX64.test(fingerprint) || !metaFile) return;
        const rootFile = root ? streamFile(root) : undefined;
        if (root && !rootFile) return;
        const description = `${str('os')} ${str('release_title')} ${product.arch as string}${label ? ` (${label})` : ''} (${serial})`;
        const properties: Record<string, string> = {
          os: str('os'),
          release: str('release'),
          version: str('version'),
          architecture: product.arch as string,
          label,
          serial,
          description,
          variant: str('variant'),
          type: rootFile ? rootFile.ftype : 'tar.gz',
        };
        for (const k of Object.keys(properties)) if (properties[k] === '') delete properties[k];
        const eol = /^\d{4}-\d{2}-\d{2}$/.test(str('support_eol'))
          ? new Date(`${str('support_eol')}T00:00:00Z`)
          : undefined;
        images.push({
          fingerprint,
          architecture,
          aliases,
          properties,
          serial,
          createdAt,
          expiresAt: eol && !Number.isNaN(eol.getTime()) ? eol : undefined,
          filename: metaFile.path.split('/').pop() ?? '',
          meta: metaFile,
          rootfs: rootFile,
          size: metaFile.size + (rootFile?.size ?? 0),
        });
      };
      for (const item of items) {
        if (item.ftype === 'lxd_combined.tar.gz') add(item, undefined, item.sha256);
        if (item.ftype !== 'lxd.tar.xz') continue;
        for (const root of items) {
          if (root.ftype === 'squashfs') add(item, root, item.combined_squashfs_sha256);
          if (root.ftype === 'root.tar.xz') add(item, root, item.combined_rootxz_sha256 || item.combined_sha256);
        }
      }
    }
  }
  return images;
}

function streamFile(item: Record<string, unknown>): StreamFile | undefined {
  if (typeof item.path !== 'string' || item.path === '' || typeof item.ftype !== 'string') return undefined;
  const sha256 = typeof item.sha256 === 'string' ? item.sha256.toLowerCase() : '';
  if (sha256 !== '' && !HEX64.test(sha256)) return undefined;
  const size = typeof item.size === 'number' && Number.isSafeInteger(item.size) && item.size >= 0 ? item.size : 0;
  return { path: item.path, ftype: item.ftype, sha256, size };
}

/** The date a version name starts with (YYYYMMDD, as LXD reads it), undefined when it does not. */
export function serialDate(serial: string): Date | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})/.exec(serial);
  if (!m) return undefined;
  const d = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  return d.getUTCMonth() === Number(m[2]) - 1 && d.getUTCDate() === Number(m[3]) ? d : undefined;
}
