/**
 * A tiny offline test image built from the host's static busybox: a rootfs directory whose init is
 * busybox init, and LXD-style image files (unified tarball, or split metadata + rootfs tarballs) with
 * their fingerprints. GNU tar runs through runCommand with argv arrays; it keeps symlinks exactly and
 * `--owner=0 --group=0 --numeric-owner` makes every entry root's.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { chmod, copyFile, mkdir, rm, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { stringify } from 'yaml';
import { runCommand } from '../../src/host/exec.ts';

export const BUSYBOX = '/bin/busybox';

/**
 * busybox init's table. Notes for containers:
 * - LXC has already mounted /proc, /sys and /dev (autodev); each sysinit mount only runs when missing,
 *   so the image also boots under a runtime that mounts nothing.
 * - Shutdown: busybox init powers off on SIGUSR2 (and, since 1.3x, on SIGPWR, lxc-stop's default),
 *   halts on SIGUSR1, reboots on SIGTERM; SIGINT (lxc-stop -r) runs `ctrlaltdel`. Specs for this
 *   image set `haltSignal: 'SIGUSR2'` so a clean stop works with any busybox version.
 * - DHCP: with an eth0 (a nic), busybox udhcpc runs in the background (an init `once` entry) and asks
 *   for a lease sending the hostname, so dnsmasq names it; /etc/udhcpc.script applies what it gets
 *   (busybox has no default script here). Without eth0 the line does nothing. (init runs a command with
 *   shell characters as `sh -c "exec <command>"`, hence the inner `sh -c '…'`.)
 * - `umount -a` without `-r`: in a privileged container the rootfs is a bind mount of the host's
 *   filesystem, and `-r` (remount read-only when busy) would remount the host's superblock read-only.
 */
export const INITTAB = `::sysinit:/bin/test -e /proc/self || /bin/mount -t proc proc /proc
::sysinit:/bin/test -d /sys/class || /bin/mount -t sysfs sysfs /sys
::sysinit:/bin/grep -q " /run " /proc/mounts || /bin/mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs /run
::sysinit:/bin/mkdir -p /dev/pts /dev/shm /run/lock
::once:/bin/sh -c 'test -e /sys/class/net/eth0 && exec /bin/udhcpc -f -i eth0 -s /etc/udhcpc.script -t 30 -T 1 -A 2 -x hostname:$(hostname)'
::askfirst:-/bin/sh
::ctrlaltdel:/bin/reboot
::shutdown:/bin/sync
::shutdown:/bin/umount -a
`;

/** busybox udhcpc's event script: address, default route and resolv.conf from the lease ($mask is a prefix length). */
export const UDHCPC_SCRIPT = `#!/bin/sh
case "$1" in
  deconfig)
    /bin/ip -4 addr flush dev "$interface"
    /bin/ip link set "$interface" up
    ;;
  bound|renew)
    [ "$1" = bound ] && /bin/ip -4 addr flush dev "$interface"
    /bin/ip addr replace "$ip/$mask" broadcast + dev "$interface"
    for r in $router; do /bin/ip route replace default via "$r" dev "$interface"; break; done
    {
      [ -n "$domain" ] && echo "search $domain"
      for d in $dns; do echo "nameserver $d"; done
    } > /etc/resolv.conf
    ;;
esac
exit 0
`;

const PASSWD = 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n';
const GROUP = 'root:x:0:\nnogroup:x:65534:\n';

/** The busybox version (`1.35.0`) from its banner. */
export async function busyboxVersion(): Promise<string> {
  const banner = await runCommand(BUSYBOX, ['--help'], { timeoutMs: 10_000 });
  const v = /BusyBox v(\d+(?:\.\d+)+)/.exec(banner)?.[1];
  if (!v) throw new Error(`cannot read the busybox version from ${JSON.stringify(banner.split('\n')[0])}`);
  return v;
}

export interface BusyboxRootfsOptions {
  /** The rootfs directory to create (its parent must exist). */
  dir: string;
  hostname?: string;
}

/** Write a bootable busybox rootfs into `dir`: /bin/busybox + applet links, /sbin/init, /etc, empty mount points. */
export async function buildBusyboxRootfs({
  dir,
  hostname = 'busybox',
}: BusyboxRootfsOptions): Promise<{ dir: string; version: string }> {
  const st = await stat(BUSYBOX).catch(() => undefined);
  if (!st?.isFile()) throw new Error(`${BUSYBOX} is missing (install busybox-static)`);
  const applets = (await runCommand(BUSYBOX, ['--list'], { timeoutMs: 10_000 })).split('\n').map((a) => a.trim());
  await mkdir(dir, { recursive: true, mode: 0o755 });
  for (const d of [
    'bin',
    'sbin',
    'etc',
    'dev',
    'proc',
    'sys',
    'run',
    'var',
    'var/log',
    'root',
    'tmp',
    'mnt',
    'usr',
    'usr/bin',
  ]) {
    await mkdir(path.join(dir, d), { recursive: true, mode: 0o755 });
  }
  await chmod(path.join(dir, 'root'), 0o700);
  await chmod(path.join(dir, 'tmp'), 0o1777);
  await copyFile(BUSYBOX, path.join(dir, 'bin/busybox'));
  await chmod(path.join(dir, 'bin/busybox'), 0o755);
  for (const a of applets) {
    if (!/^[A-Za-z0-9_.[\]-]+$/.test(a) || a === 'busybox') continue;
    await symlink('busybox', path.join(dir, 'bin', a)).catch((e: NodeJS.ErrnoException) => {
      if (e.code !== 'EEXIST') throw e;
    });
  }
  await symlink('../bin/busybox', path.join(dir, 'sbin/init'));
  const files: Record<string, string> = {
    'etc/inittab': INITTAB,
    'etc/passwd': PASSWD,
    'etc/group': GROUP,
    'etc/hostname': `${hostname}\n`,
    'etc/hosts': `127.0.0.1 localhost\n127.0.1.1 ${hostname}\n::1 localhost ip6-localhost ip6-loopback\n`,
  };
  for (const [f, text] of Object.entries(files)) await writeFile(path.join(dir, f), text, { mode: 0o644 });
  await writeFile(path.join(dir, 'etc/udhcpc.script'), UDHCPC_SCRIPT, { mode: 0o755 });
  return { dir, version: await busyboxVersion() };
}

export interface BusyboxImageOptions {
  /** Output directory (created); the staging tree goes to `<dir>/build`. */
  dir: string;
  format: 'unified' | 'split';
  compression: 'gzip' | 'none';
  /** Unix seconds for metadata.yaml (default now). */
  creationDate?: number;
  /** More metadata.yaml templates (target path → template), beside the default /etc/hostname one. */
  templates?: Record<string, BusyboxTemplate>;
  /** More files in templates/ (name → content). */
  templateFiles?: Record<string, string>;
  /** Called with the rootfs directory before it is packed (to add files, links...). */
  customizeRootfs?: (rootfs: string) => Promise<void>;
}

export interface BusyboxTemplate {
  when: string[];
  template: string;
  create_only?: boolean;
  properties?: Record<string, string>;
}

export interface BusyboxImageMetadata {
  architecture: string;
  creation_date: number;
  properties: { os: string; release: string; description: string };
  templates: Record<string, BusyboxTemplate>;
}

export type BusyboxImage =
  | { format: 'unified'; file: string; fingerprint: string; metadata: BusyboxImageMetadata }
  | { format: 'split'; metadataFile: string; rootfsFile: string; fingerprint: string; metadata: BusyboxImageMetadata };

/** LXD's architecture name for this host. */
const ARCH: Record<string, string> = {
  x64: 'x86_64',
  arm64: 'aarch64',
  arm: 'armv7l',
  ppc64: 'ppc64le',
  s390x: 's390x',
  riscv64: 'riscv64',
};

async function sha256(files: readonly string[]): Promise<string> {
  const h = createHash('sha256');
  for (const f of files) {
    for await (const chunk of createReadStream(f)) h.update(chunk as Buffer);
  }
  return h.digest('hex');
}

/**
 * Build an image: unified = one tarball with metadata.yaml, templates/ and rootfs/ (fingerprint = its
 * sha256); split = a metadata tarball (metadata.yaml, templates/) and a rootfs tarball holding the
 * rootfs at its top (fingerprint = sha256 of the metadata bytes followed by the rootfs bytes, LXD's rule).
 */
export async function buildBusyboxImage(opts: BusyboxImageOptions): Promise<BusyboxImage> {
  const build = path.join(opts.dir, 'build');
  // From empty each time: a second run into the same directory (the README's command, run again) rebuilds.
  await rm(build, { recursive: true, force: true });
  await mkdir(build, { recursive: true });
  const { version } = await buildBusyboxRootfs({ dir: path.join(build, 'rootfs') });
  const metadata: BusyboxImageMetadata = {
    architecture: ARCH[process.arch] ?? process.arch,
    creation_date: opts.creationDate ?? Math.floor(Date.now() / 1000),
    properties: { os: 'busybox', release: version, description: `BusyBox ${version} (svcd test image)` },
    templates: { '/etc/hostname': { when: ['create', 'copy'], template: 'hostname.tpl' }, ...opts.templates },
  };
  await opts.customizeRootfs?.(path.join(build, 'rootfs'));
  await writeFile(path.join(build, 'metadata.yaml'), stringify(metadata));
  await mkdir(path.join(build, 'templates'), { recursive: true });
  await writeFile(path.join(build, 'templates/hostname.tpl'), '{{ container.name }}\n');
  for (const [name, text] of Object.entries(opts.templateFiles ?? {}))
    await writeFile(path.join(build, 'templates', name), text);

  const gz = opts.compression === 'gzip';
  const ext = gz ? '.tar.gz' : '.tar';
  const tar = async (out: string, cwd: string, entries: string[]) => {
    await runCommand(
      'tar',
      ['-C', cwd, '--numeric-owner', '--owner=0', '--group=0', '--sort=name', gz ? '-czf' : '-cf', out, ...entries],
      { timeoutMs: 120_000 },
    );
  };
  if (opts.format === 'unified') {
    const file = path.join(opts.dir, `busybox-${version}${ext}`);
    await tar(file, build, ['metadata.yaml', 'templates', 'rootfs']);
    return { format: 'unified', file, fingerprint: await sha256([file]), metadata };
  }
  const metadataFile = path.join(opts.dir, `busybox-${version}.metadata${ext}`);
  const rootfsFile = path.join(opts.dir, `busybox-${version}.rootfs${ext}`);
  await tar(metadataFile, build, ['metadata.yaml', 'templates']);
  await tar(rootfsFile, path.join(build, 'rootfs'), ['.']);
  return { format: 'split', metadataFile, rootfsFile, fingerprint: await sha256([metadataFile, rootfsFile]), metadata };
}
