import { ROOTFS_TYPES, type StreamImage } from './parse-products.ts';

export interface StreamQuery {
  alias?: string | undefined;
  /** A full fingerprint or a unique prefix. */
  fingerprint?: string | undefined;
}

/**
 * The one image a pull means. By fingerprint: the image whose fingerprint starts with it (unique).
 * By alias (a product alias, or `<alias>/<arch>`): among the images carrying it for one of
 * `architectures` (in order of preference; empty = any), the host's first architecture, then the
 * newest serial, then squashfs over root.tar.xz over a unified tarball — what LXD's alias table
 * points at. Errors name the server and say what was missing.
 */
export function selectStreamImage(
  images: StreamImage[],
  query: StreamQuery,
  architectures: string[],
  server: string,
): StreamImage {
  const fitsHost = (img: StreamImage) => architectures.length === 0 || architectures.includes(img.architecture);
  const archList = architectures.join(', ');
  if (query.fingerprint !== undefined) {
    const prefix = query.fingerprint.toLowerCase();
    const found = new Map(images.filter((i) => i.fingerprint.startsWith(prefix)).map((i) => [i.fingerprint, i]));
    if (found.size === 0) throw new Error(`Image "${query.fingerprint}" not found on ${server}`);
    if (found.size > 1)
      throw new Error(`More than one image on ${server} matches the partial fingerprint "${query.fingerprint}"`);
    const image = [...found.values()][0] as StreamImage;
    if (!fitsHost(image))
      throw new Error(
        `Image "${query.fingerprint}" on ${server} is for architecture ${image.architecture}, not one of this host's (${archList})`,
      );
    return image;
  }
  const alias = query.alias ?? '';
  const named = images.filter((i) => i.aliases.includes(alias));
  if (named.length === 0) throw new Error(`Alias "${alias}" not found on ${server}`);
  const usable = named.filter(fitsHost);
  if (usable.length === 0) {
    const offered = [...new Set(named.map((i) => i.architecture))].join(', ');
    throw new Error(
      `Alias "${alias}" on ${server} has no image for this host's architectures (${archList}); it has: ${offered}`,
    );
  }
  const archRank = (i: StreamImage) => (architectures.length ? architectures.indexOf(i.architecture) : 0);
  const typeRank = (i: StreamImage) =>
    i.rootfs ? ROOTFS_TYPES.indexOf(i.rootfs.ftype as (typeof ROOTFS_TYPES)[number]) : ROOTFS_TYPES.length;
  usable.sort(
    (a, b) =>
      archRank(a) - archRank(b) ||
      (a.serial < b.serial ? 1 : a.serial > b.serial ? -1 : 0) ||
      typeRank(a) - typeRank(b),
  );
  return usable[0] as StreamImage;
}
