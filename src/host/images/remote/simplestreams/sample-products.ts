/** A products file shaped like images.linuxcontainers.org's (trimmed), for the parser tests. */
export const H = (c: string) => c.repeat(64);

export const PRODUCTS = {
  content_id: 'images',
  datatype: 'image-downloads',
  format: 'products:1.0',
  products: {
    'debian:bookworm:amd64:default': {
      aliases: 'debian/bookworm/default,debian/bookworm,debian/12',
      arch: 'amd64',
      os: 'Debian',
      release: 'bookworm',
      release_title: 'bookworm',
      variant: 'default',
      versions: {
        '20240101_05:24': {
          items: {
            'lxd.tar.xz': {
              ftype: 'lxd.tar.xz',
              path: 'images/debian/old/lxd.tar.xz',
              sha256: H('1'),
              size: 100,
              combined_squashfs_sha256: H('a'),
              combined_rootxz_sha256: H('b'),
            },
            'root.tar.xz': {
              ftype: 'root.tar.xz',
              path: 'images/debian/old/rootfs.tar.xz',
              sha256: H('2'),
              size: 2000,
            },
            'rootfs.squashfs': {
              ftype: 'squashfs',
              path: 'images/debian/old/rootfs.squashfs',
              sha256: H('3'),
              size: 3000,
            },
            'disk.qcow2': { ftype: 'disk-kvm.img', path: 'images/debian/old/disk.qcow2', sha256: H('4'), size: 9000 },
          },
        },
        '20240202_05:24': {
          label: 'daily',
          items: {
            'lxd.tar.xz': {
              ftype: 'lxd.tar.xz',
              path: 'images/debian/new/lxd.tar.xz',
              sha256: H('5'),
              size: 100,
              combined_squashfs_sha256: H('c'),
              combined_sha256: H('d'),
            },
            'root.tar.xz': {
              ftype: 'root.tar.xz',
              path: 'images/debian/new/rootfs.tar.xz',
              sha256: H('6'),
              size: 2000,
            },
            'rootfs.squashfs': {
              ftype: 'squashfs',
              path: 'images/debian/new/rootfs.squashfs',
              sha256: H('7'),
              size: 3000,
            },
          },
        },
        latest: { items: {} },
      },
    },
    'busybox:1:arm64': {
      aliases: 'busybox',
      arch: 'arm64',
      os: 'BusyBox',
      release: '1',
      release_title: '1',
      support_eol: '2030-01-31',
      versions: {
        '20240303': {
          items: {
            unified: { ftype: 'lxd_combined.tar.gz', path: 'busybox/unified.tar.gz', sha256: H('e'), size: 500 },
          },
        },
      },
    },
    'weird:1:pdp11': {
      aliases: 'weird',
      arch: 'pdp11',
      versions: { '20240101': { items: { u: { ftype: 'lxd_combined.tar.gz', path: 'w', sha256: H('f'), size: 1 } } } },
    },
  },
};
