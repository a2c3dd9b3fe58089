/*
 * svcd-shift: move a root filesystem from one id map to another, in place, as LXD's shifter does
 * (shared/idmap/shift_linux.go): ownership, POSIX ACL entries and the root id of v3 file capabilities.
 *
 *   svcd-shift DIR RULE...      RULE is  u:FROM:TO:COUNT  or  g:FROM:TO:COUNT
 *
 * An id in [FROM, FROM+COUNT) becomes TO + (id - FROM); ids no rule covers stay as they are. A received
 * container's tree comes owned by the sending host's ids (its map: host id -> container id), and svcd
 * keeps every root filesystem in container ids (idmapped mounts map it at start): the rules are the
 * sender's map, host to namespace.
 *
 * The walk never follows symlinks and never crosses into another filesystem (FTW_PHYS | FTW_MOUNT).
 * chown(2) clears the set-id bits and file capabilities even for root, so both are read first and put
 * back after (capabilities with their root id shifted; a v3 capability whose root id becomes 0 is
 * written as v2, which the kernel reads as "root of any namespace that owns the file").
 *
 * Exit 0 when done; 1 with a message on stderr naming the file that failed; 2 on bad arguments.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#define MAX_RULES 64
#define ACL_USER 0x02
#define ACL_GROUP 0x08
#define VFS_CAP_REVISION_MASK 0xFF000000u
#define VFS_CAP_REVISION_2 0x02000000u
#define VFS_CAP_REVISION_3 0x03000000u
#define VFS_CAP_FLAGS_EFFECTIVE 0x000001u

struct rule {
  int gid;
  uint64_t from, to, count;
};

static struct rule rules[MAX_RULES];
static int nrules;
static unsigned long changed;

static uint64_t shift(uint64_t id, int gid) {
  for (int i = 0; i < nrules; i++) {
    const struct rule *r = &rules[i];
    if (r->gid == gid && id >= r->from && id < r->from + r->count) return r->to + (id - r->from);
  }
  return id;
}

static uint32_t le32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static void put32(unsigned char *p, uint32_t v) {
  p[0] = v & 0xff;
  p[1] = (v >> 8) & 0xff;
  p[2] = (v >> 16) & 0xff;
  p[3] = (v >> 24) & 0xff;
}

static int fail(const char *what, const char *path) {
  fprintf(stderr, "svcd-shift: %s %s: %s\n", what, path, strerror(errno));
  return 1;
}

/* Rewrite the ids of one ACL xattr (version 2 header, then 8-byte entries: tag u16, perm u16, id u32). */
static int shift_acl(const char *path, const char *name) {
  unsigned char buf[65536];
  ssize_t n = lgetxattr(path, name, buf, sizeof buf);
  if (n < 0) return errno == ENODATA || errno == ENOTSUP ? 0 : fail("reading", path);
  if (n < 4 || (n - 4) % 8 != 0) return 0;
  int dirty = 0;
  for (ssize_t off = 4; off + 8 <= n; off += 8) {
    unsigned tag = (unsigned)buf[off] | (unsigned)buf[off + 1] << 8;
    if (tag != ACL_USER && tag != ACL_GROUP) continue;
    uint32_t id = le32(buf + off + 4);
    uint32_t to = (uint32_t)shift(id, tag == ACL_GROUP);
    if (to != id) {
      put32(buf + off + 4, to);
      dirty = 1;
    }
  }
  if (dirty && lsetxattr(path, name, buf, (size_t)n, 0) < 0) return fail("writing the ACL of", path);
  return 0;
}

static int visit(const char *path, const struct stat *st, int type, struct FTW *ftw) {
  (void)ftw;
  if (type == FTW_NS || type == FTW_DNR) {
    fprintf(stderr, "svcd-shift: cannot read %s\n", path);
    return 1;
  }
  uid_t uid = (uid_t)shift(st->st_uid, 0);
  gid_t gid = (gid_t)shift(st->st_gid, 1);
  int link = S_ISLNK(st->st_mode);
  if (uid != st->st_uid || gid != st->st_gid) {
    unsigned char cap[32];
    ssize_t caplen = link ? -1 : lgetxattr(path, "security.capability", cap, sizeof cap);
    if (lchown(path, uid, gid) < 0) return fail("changing the owner of", path);
    if (!link && (st->st_mode & (S_ISUID | S_ISGID)) && chmod(path, st->st_mode & 07777) < 0)
      return fail("restoring the mode of", path);
    if (caplen >= 20) {
      uint32_t magic = le32(cap);
      size_t len = (size_t)caplen;
      if ((magic & VFS_CAP_REVISION_MASK) == VFS_CAP_REVISION_3 && caplen >= 24) {
        uint32_t root = (uint32_t)shift(le32(cap + 20), 0);
        if (root == 0) {
          put32(cap, VFS_CAP_REVISION_2 | (magic & VFS_CAP_FLAGS_EFFECTIVE));
          len = 20;
        } else
          put32(cap + 20, root);
      }
      if (lsetxattr(path, "security.capability", cap, len, 0) < 0)
        return fail("restoring the file capabilities of", path);
    }
    changed++;
  }
  if (link) return 0;
  if (shift_acl(path, "system.posix_acl_access")) return 1;
  if (S_ISDIR(st->st_mode) && shift_acl(path, "system.posix_acl_default")) return 1;
  return 0;
}

static int parse_rule(const char *s, struct rule *r) {
  char kind;
  unsigned long long from, to, count;
  int used = 0;
  if (sscanf(s, "%c:%llu:%llu:%llu%n", &kind, &from, &to, &count, &used) != 4 || s[used] != '\0') return -1;
  if ((kind != 'u' && kind != 'g') || count == 0 || from + count > 0x100000000ull || to + count > 0x100000000ull)
    return -1;
  r->gid = kind == 'g';
  r->from = from;
  r->to = to;
  r->count = count;
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 3 || argv[1][0] != '/') {
    fprintf(stderr, "usage: svcd-shift /DIR u|g:FROM:TO:COUNT...\n");
    return 2;
  }
  for (int i = 2; i < argc; i++) {
    if (nrules == MAX_RULES || parse_rule(argv[i], &rules[nrules]) < 0) {
      fprintf(stderr, "svcd-shift: invalid rule \"%s\" (u|g:FROM:TO:COUNT)\n", argv[i]);
      return 2;
    }
    nrules++;
  }
  if (nftw(argv[1], visit, 64, FTW_PHYS | FTW_MOUNT) != 0) return 1;
  printf("%lu\n", changed);
  return 0;
}
