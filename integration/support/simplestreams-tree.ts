/**
 * A simplestreams tree built from the suite's busybox test image: per version (serial), a unified
 * `lxd_combined.tar.gz` and a split image whose `lxd.tar.xz` metadata pairs with a `rootfs.squashfs`
 * and a `root.tar.xz` — three images, with the sha256s and combined fingerprints LXD's simplestreams
 * client reads. Pure file building; simplestreams-server.ts serves it.
 */
import { mkdir, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { runCommand } from '../../src/host/exec.ts';
import { sha256Files } from '../../src/host/images/hashed-file.ts';
import { buildBusyboxImage } from './busybox-image.ts';

export type StreamItemKind = 'unified' | 'squashfs' | 'rootxz';

export interface StreamFileInfo {
  /** Path under the server root (`images/<serial>/lxd.tar.xz`). */
  path: string;
  file: string;
  sha256: string;
  size: number;
}

export interface StreamVersion {
  serial: string;
  /** Fingerprints of the version's images by kind. */
  fingerprints: Partial<Record<StreamItemKind, string>>;
  files: { meta?: StreamFileInfo; squashfs?: StreamFileInfo; rootxz?: StreamFileInfo; unified?: StreamFileInfo };
}

/** Debian's names for the host architecture, as image servers publish them. */
export const STREAM_ARCH: Record<string, string> = {
  x64: 'amd64',
  arm64: 'arm64',
  arm: 'armhf',
  ppc64: 'ppc64el',
  s390x: 's390x',
  riscv64: 'riscv64',
};

async function fileInfo(root: string, rel: string): Promise<StreamFileInfo> {
  const file = path.join(root, rel);
  return { path: rel, file, sha256: await sha256Files([file]), size: (await stat(file)).size };
}

/** Build version `serial` of the image under `<root>/images/<serial>/` with the given item kinds. */
export async function buildStreamVersion(
  root: string,
  serial: string,
  kinds: readonly StreamItemKind[],
): Promise<StreamVersion> {
  const rel = `images/${serial}`;
  const dir = path.join(root, rel);
  const work = path.join(root, 'work', serial);
  await mkdir(dir, { recursive: true });
  const img = await buildBusyboxImage({
    dir: work,
    format: 'split',
    compression: 'none',
    creationDate: Math.floor(Date.now() / 1000),
    customizeRootfs: (rootfs) => writeFile(path.join(rootfs, 'etc/image-serial'), `${serial}\n`),
  });
  if (img.format !== 'split') throw new Error('expected a split build');
  const build = path.join(work, 'build');
  const version: StreamVersion = { serial, fingerprints: {}, files: {} };
  const split = kinds.includes('squashfs') || kinds.includes('rootxz');
  if (split) {
    await runCommand('xz', ['-T1', '-1', '-k', '-f', '--', img.metadataFile], { timeoutMs: 120_000 });
    await runCommand('mv', ['--', `${img.metadataFile}.xz`, path.join(dir, 'lxd.tar.xz')], { timeoutMs: 10_000 });
    version.files.meta = await fileInfo(root, `${rel}/lxd.tar.xz`);
  }
  if (kinds.includes('squashfs')) {
    await runCommand(
      'mksquashfs',
      [
        path.join(build, 'rootfs'),
        path.join(dir, 'rootfs.squashfs'),
        '-noappend',
        '-quiet',
        '-no-progress',
        '-all-root',
      ],
      { timeoutMs: 120_000 },
    );
    version.files.squashfs = await fileInfo(root, `${rel}/rootfs.squashfs`);
    version.fingerprints.squashfs = await sha256Files([version.files.meta!.file, version.files.squashfs.file]);
  }
  if (kinds.includes('rootxz')) {
    await runCommand('xz', ['-T1', '-1', '-k', '-f', '--', img.rootfsFile], { timeoutMs: 120_000 });
    await runCommand('mv', ['--', `${img.rootfsFile}.xz`, path.join(dir, 'root.tar.xz')], { timeoutMs: 10_000 });
    version.files.rootxz = await fileInfo(root, `${rel}/root.tar.xz`);
    version.fingerprints.rootxz = await sha256Files([version.files.meta!.file, version.files.rootxz.file]);
  }
  if (kinds.includes('unified')) {
    await runCommand(
      'tar',
      [
        '-C',
        build,
        '--numeric-owner',
        '--owner=0',
        '--group=0',
        '--sort=name',
        '-czf',
        path.join(dir, 'lxd_combined.tar.gz'),
        'metadata.yaml',
        'templates',
        'rootfs',
      ],
      { timeoutMs: 120_000 },
    );
    version.files.unified = await fileInfo(root, `${rel}/lxd_combined.tar.gz`);
    version.fingerprints.unified = version.files.unified.sha256;
  }
  await rm(work, { recursive: true, force: true });
  return version;
}

export interface StreamProduct {
  aliases: string[];
  os: string;
  release: string;
  versions: StreamVersion[];
}

/** index.json and the products file (`streams/v1/images.json`) for one product of the host's architecture. */
export function renderStream(product: StreamProduct): { index: unknown; products: unknown } {
  const arch = STREAM_ARCH[process.arch] ?? process.arch;
  const id = `${product.os}:${product.release}:${arch}:default`;
  const item = (f: StreamFileInfo, ftype: string, extra: Record<string, string> = {}) => ({
    ftype,
    path: f.path,
    sha256: f.sha256,
    size: f.size,
    ...extra,
  });
  const versions: Record<string, unknown> = {};
  for (const v of product.versions) {
    const items: Record<string, unknown> = {};
    const { meta, squashfs, rootxz, unified } = v.files;
    if (meta) {
      const extra: Record<string, string> = {};
      if (v.fingerprints.squashfs) extra.combined_squashfs_sha256 = v.fingerprints.squashfs;
      if (v.fingerprints.rootxz) extra.combined_rootxz_sha256 = extra.combined_sha256 = v.fingerprints.rootxz;
      items['lxd.tar.xz'] = item(meta, 'lxd.tar.xz', extra);
    }
    if (squashfs) items['root.squashfs'] = item(squashfs, 'squashfs');
    if (rootxz) items['root.tar.xz'] = item(rootxz, 'root.tar.xz');
    if (unified) items['lxd_combined.tar.gz'] = item(unified, 'lxd_combined.tar.gz');
    versions[v.serial] = { items };
  }
  const updated = new Date().toUTCString();
  return {
    index: {
      format: 'index:1.0',
      updated,
      index: {
        images: {
          datatype: 'image-downloads',
          format: 'products:1.0',
          path: 'streams/v1/images.json',
          updated,
          products: [id],
        },
      },
    },
    products: {
      content_id: 'images',
      datatype: 'image-downloads',
      format: 'products:1.0',
      updated,
      products: {
        [id]: {
          aliases: product.aliases.join(','),
          arch,
          os: product.os,
          release: product.release,
          release_title: product.release,
          variant: 'default',
          versions,
        },
      },
    },
  };
}
