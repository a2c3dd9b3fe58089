import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chown, copyFile, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export const sha256 = (...bufs: Buffer[]) => {
  const h = createHash('sha256');
  for (const b of bufs) h.update(b);
  return h.digest('hex');
};

/** A tiny image tree made in a temp dir: metadata.yaml, templates/, rootfs/ with busybox, a symlink and a file owned by uid 1000. */
export interface ImageTree {
  dir: string;
  /** A unified tarball of the tree (GNU tar; compression flag e.g. `--gzip`, none for plain tar). */
  unified(name: string, compress?: string): Promise<Buffer>;
  /** The metadata tarball of a split image. */
  meta(name: string, compress?: string): Promise<Buffer>;
  /** The rootfs tarball of a split image (the rootfs at the tarball's root). */
  rootfs(name: string, compress?: string): Promise<Buffer>;
  /** The rootfs as squashfs (undefined when mksquashfs is absent). */
  squashfs(name: string): Promise<Buffer | undefined>;
  cleanup(): Promise<void>;
}

export async function makeImageTree(opts: { description?: string; extra?: string } = {}): Promise<ImageTree> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'svcd-image-'));
  const tree = path.join(dir, 'tree');
  const rootfs = path.join(tree, 'rootfs');
  await mkdir(path.join(rootfs, 'bin'), { recursive: true });
  await mkdir(path.join(rootfs, 'home/user'), { recursive: true });
  await mkdir(path.join(rootfs, 'etc'), { recursive: true });
  await mkdir(path.join(tree, 'templates'), { recursive: true });
  await copyFile('/bin/busybox', path.join(rootfs, 'bin/busybox'));
  await symlink('busybox', path.join(rootfs, 'bin/sh'));
  await writeFile(path.join(rootfs, 'home/user/owned'), `owned by 1000 ${opts.extra ?? ''}\n`);
  await chown(path.join(rootfs, 'home/user/owned'), 1000, 1000);
  await chown(path.join(rootfs, 'home/user'), 1000, 1000);
  await writeFile(path.join(rootfs, 'etc/hostname'), 'image\n');
  await writeFile(path.join(tree, 'templates/hostname.tpl'), '{{ container.name }}\n');
  await writeFile(
    path.join(tree, 'metadata.yaml'),
    [
      'architecture: x86_64',
      'creation_date: 1700000000',
      'properties:',
      '  os: busybox',
      '  release: "1.0"',
      `  description: ${opts.description ?? 'svcd test image'}`,
      'templates:',
      '  /etc/hostname:',
      '    when: [create]',
      '    template: hostname.tpl',
      '',
    ].join('\n'),
  );
  const tar = async (name: string, cwd: string, members: string[], compress?: string) => {
    const out = path.join(dir, name);
    await run('tar', [
      '--create',
      '--file',
      out,
      '--directory',
      cwd,
      '--numeric-owner',
      '--sort=name',
      ...(compress ? [compress] : []),
      '--',
      ...members,
    ]);
    return readFile(out);
  };
  return {
    dir,
    unified: (name, compress) => tar(name, tree, ['metadata.yaml', 'templates', 'rootfs'], compress),
    meta: (name, compress) => tar(name, tree, ['metadata.yaml', 'templates'], compress),
    rootfs: (name, compress) => tar(name, rootfs, ['.'], compress),
    async squashfs(name) {
      const out = path.join(dir, name);
      try {
        await run('mksquashfs', [rootfs, out, '-noappend', '-quiet', '-no-progress']);
      } catch {
        return undefined;
      }
      return readFile(out);
    },
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}

/** A multipart/form-data body as Go's mime/multipart writer (the lxc CLI) makes it. */
export function multipartBody(parts: [name: string, filename: string, data: Buffer][]): {
  body: Buffer;
  contentType: string;
} {
  const boundary = createHash('sha1').update(String(Math.random())).digest('hex');
  const out: Buffer[] = [];
  parts.forEach(([name, filename, data], i) => {
    out.push(
      Buffer.from(
        `${i ? '\r\n' : ''}--${boundary}\r\nContent-Disposition: form-data; name="${name}"; filename="${filename}"\r\nContent-Type: application/octet-stream\r\n\r\n`,
      ),
      data,
    );
  });
  out.push(Buffer.from(`\r\n--${boundary}--\r\n`));
  return { body: Buffer.concat(out), contentType: `multipart/form-data; boundary=${boundary}` };
}

/** Split a multipart/form-data body into its parts (name, filename, bytes). */
export function parseMultipart(body: Buffer, contentType: string): { name: string; filename: string; data: Buffer }[] {
  const boundary = /boundary=([^;]+)/.exec(contentType)?.[1];
  if (!boundary) throw new Error(`no boundary in ${contentType}`);
  const parts: { name: string; filename: string; data: Buffer }[] = [];
  const delim = Buffer.from(`--${boundary}`);
  let pos = body.indexOf(delim);
  for (;;) {
    pos += delim.length;
    if (body.subarray(pos, pos + 2).toString() === '--') break;
    const headEnd = body.indexOf('\r\n\r\n', pos);
    const head = body.subarray(pos + 2, headEnd).toString();
    const next = body.indexOf(Buffer.from(`\r\n--${boundary}`), headEnd + 4);
    parts.push({
      name: /name="([^"]*)"/.exec(head)?.[1] ?? '',
      filename: /filename="?([^";\r\n]*)"?/.exec(head)?.[1] ?? '',
      data: body.subarray(headEnd + 4, next),
    });
    pos = next + 2;
  }
  return parts;
}
