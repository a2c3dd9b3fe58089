/*
 * svcd-mountns: add or remove a bind mount inside a running container's mount namespace.
 *
 *   svcd-mountns attach <pid> <source> <target> <dir|file> [ro] [recursive] [idmap] [propagation=<p>]
 *   svcd-mountns detach <pid> <target> [remove]   (remove: then delete the target if it is an empty file)
 *
 * Node cannot do this itself: setns(CLONE_NEWNS) is refused to a multithreaded process. The new mount
 * API lets the source be picked up on the host side and moved into the container, so the source never
 * has to be visible inside it:
 *   1. open_tree(source, OPEN_TREE_CLONE) makes a detached copy of the source mount (recursive with
 *      `recursive`); mount_setattr() makes it read-only, idmapped to the container's user namespace
 *      (`idmap`) and sets its propagation;
 *   2. the process joins the container's user namespace (if it has its own) as its root, then its
 *      mount namespace: from here on every path resolves inside the container, symlinks included, so
 *      a target can never lead back to the host;
 *   3. the target is created if missing (a directory, or an empty file for a file source), as the
 *      container's root, and move_mount() attaches the tree there.
 * Errors are one line on stderr naming the step; exit 1 for them, 2 for bad arguments.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/mount.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#ifndef MOUNT_ATTR_IDMAP
#define MOUNT_ATTR_IDMAP 0x00100000
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif

static int die(const char *step, const char *what) {
  fprintf(stderr, "%s %s: %s\n", step, what, strerror(errno));
  return 1;
}

static int usage(void) {
  fprintf(stderr,
          "usage: svcd-mountns attach <pid> <source> <target> <dir|file> [ro] [recursive] [idmap] [propagation=<p>]\n"
          "       svcd-mountns detach <pid> <target> [remove]\n");
  return 2;
}

static int open_ns(const char *pid, const char *ns) {
  char p[64];
  snprintf(p, sizeof p, "/proc/%s/ns/%s", pid, ns);
  return open(p, O_RDONLY | O_CLOEXEC);
}

/* Whether two namespace files are the same namespace. */
static int same_ns(int a, int b) {
  struct stat sa, sb;
  if (fstat(a, &sa) < 0 || fstat(b, &sb) < 0) return 0;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* Join the container's namespaces: its user namespace first (as its root), then its mount namespace. */
static int enter(const char *pid) {
  int mnt = open_ns(pid, "mnt");
  if (mnt < 0) return die("open", "mount namespace");
  int user = open_ns(pid, "user");
  if (user < 0) return die("open", "user namespace");
  int own = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC);
  if (own < 0) return die("open", "own user namespace");
  if (!same_ns(user, own)) {
    if (setns(user, CLONE_NEWUSER) < 0) return die("setns", "user namespace");
    if (setgroups(0, NULL) < 0 && errno != EPERM) return die("setgroups", "container root");
    if (setresgid(0, 0, 0) < 0) return die("setresgid", "container root");
    if (setresuid(0, 0, 0) < 0) return die("setresuid", "container root");
  }
  if (setns(mnt, CLONE_NEWNS) < 0) return die("setns", "mount namespace");
  if (chdir("/") < 0) return die("chdir", "/");
  close(mnt);
  close(user);
  close(own);
  return 0;
}

/* mkdir -p of every parent of `target` (and of target itself when `dir`), then an empty file when not. */
static int make_target(const char *target, int dir) {
  char buf[PATH_MAX];
  if (strlen(target) >= sizeof buf) {
    errno = ENAMETOOLONG;
    return die("target", target);
  }
  strcpy(buf, target);
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    if (mkdir(buf, 0755) < 0 && errno != EEXIST) return die("mkdir", buf);
    *p = '/';
  }
  if (dir) {
    if (mkdir(buf, 0755) < 0 && errno != EEXIST) return die("mkdir", buf);
  } else {
    int fd = open(buf, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0 && errno != EEXIST && errno != EISDIR) return die("create", buf);
    if (fd >= 0) close(fd);
  }
  return 0;
}

/* Whether `target` (resolved in the current root) is a mount point: its mount id differs from its parent's. */
static int is_mount_point(const char *target) {
  struct statx a, b;
  char parent[PATH_MAX];
  if (strlen(target) >= sizeof parent) return 0;
  if (syscall(SYS_statx, AT_FDCWD, target, AT_NO_AUTOMOUNT, STATX_MNT_ID, &a) < 0) return 0;
  if (strcmp(target, "/") == 0) return 1;
  strcpy(parent, target);
  char *slash = strrchr(parent, '/');
  if (slash == parent)
    parent[1] = 0;
  else
    *slash = 0;
  if (syscall(SYS_statx, AT_FDCWD, parent, AT_NO_AUTOMOUNT, STATX_MNT_ID, &b) < 0) return 0;
  return a.stx_mnt_id != b.stx_mnt_id;
}

static uint64_t propagation_of(const char *p) {
  if (strcmp(p, "private") == 0 || strcmp(p, "rprivate") == 0) return MS_PRIVATE;
  if (strcmp(p, "shared") == 0 || strcmp(p, "rshared") == 0) return MS_SHARED;
  if (strcmp(p, "slave") == 0 || strcmp(p, "rslave") == 0) return MS_SLAVE;
  if (strcmp(p, "unbindable") == 0 || strcmp(p, "runbindable") == 0) return MS_UNBINDABLE;
  return 0;
}

static int attach(int argc, char **argv) {
  if (argc < 6) return usage();
  const char *pid = argv[2], *source = argv[3], *target = argv[4];
  int dir = strcmp(argv[5], "dir") == 0;
  if (!dir && strcmp(argv[5], "file") != 0) return usage();
  int ro = 0, recursive = 0, idmap = 0;
  uint64_t propagation = 0;
  for (int i = 6; i < argc; i++) {
    if (strcmp(argv[i], "ro") == 0)
      ro = 1;
    else if (strcmp(argv[i], "recursive") == 0)
      recursive = 1;
    else if (strcmp(argv[i], "idmap") == 0)
      idmap = 1;
    else if (strncmp(argv[i], "propagation=", 12) == 0) {
      propagation = propagation_of(argv[i] + 12);
      if (!propagation) return usage();
    } else
      return usage();
  }
  if (target[0] != '/') return usage();

  int tree = (int)syscall(SYS_open_tree, AT_FDCWD, source,
                          OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (recursive ? AT_RECURSIVE : 0));
  if (tree < 0) return die("open_tree", source);
  struct mount_attr attr;
  memset(&attr, 0, sizeof attr);
  if (ro) attr.attr_set |= MOUNT_ATTR_RDONLY;
  if (idmap) {
    int user = open_ns(pid, "user");
    if (user < 0) return die("open", "user namespace");
    attr.attr_set |= MOUNT_ATTR_IDMAP;
    attr.userns_fd = user;
  }
  attr.propagation = propagation;
  if ((attr.attr_set || attr.propagation) &&
      syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0), &attr, sizeof attr) < 0)
    return die("mount_setattr", source);

  if (enter(pid)) return 1;
  if (make_target(target, dir)) return 1;
  if (syscall(SYS_move_mount, tree, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH) < 0)
    return die("move_mount", target);
  return 0;
}

static int detach(int argc, char **argv) {
  if (argc != 4 && !(argc == 5 && strcmp(argv[4], "remove") == 0)) return usage();
  const char *target = argv[3];
  if (target[0] != '/') return usage();
  if (enter(argv[2])) return 1;
  /* Every mount stacked at the target (a repeated attach stacks): until it is no mount point. */
  for (int i = 0; i < 64 && is_mount_point(target); i++) {
    if (umount2(target, MNT_DETACH | UMOUNT_NOFOLLOW) < 0) return die("umount", target);
  }
  /* The empty file made to mount a device node on: it goes with the device. */
  struct stat st;
  if (argc == 5 && lstat(target, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0 && unlink(target) < 0)
    return die("unlink", target);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) return usage();
  if (strcmp(argv[1], "attach") == 0) return attach(argc, argv);
  if (strcmp(argv[1], "detach") == 0) return detach(argc, argv);
  return usage();
}
