/*
 * svcd-notify: send one sd_notify message to systemd on behalf of the svcd daemon.
 *
 *   svcd-notify <notify-socket> <pid> <message>
 *
 * node cannot send unix datagrams, so svcd runs this (through its spawn helper) once its API answers
 * ("READY=1\nMAINPID=<pid>") and when it stops ("STOPPING=1"). The datagram carries SCM_CREDENTIALS
 * with pid = <pid>, the daemon's own pid: the kernel lets a process with CAP_SYS_ADMIN (root) state
 * another pid, so systemd attributes the message to the main process even after this helper has
 * exited (systemd-notify's race: by the time systemd reads the message, the sender is gone and cannot
 * be placed in the unit's cgroup). NotifyAccess=main is then enough.
 *
 * <notify-socket> is $NOTIFY_SOCKET: a path, or '@name' for the abstract namespace.
 * Exit status: 0 sent; 1 the socket or the send failed (message on stderr); 2 usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int send_with_credentials(int fd, const struct sockaddr_un *addr, socklen_t addrlen, const char *msg,
                                 pid_t pid) {
  struct iovec iov = {.iov_base = (void *)msg, .iov_len = strlen(msg)};
  union {
    char buf[CMSG_SPACE(sizeof(struct ucred))];
    struct cmsghdr align;
  } control;
  memset(&control, 0, sizeof(control));
  struct msghdr mh = {
      .msg_name = (void *)addr,
      .msg_namelen = addrlen,
      .msg_iov = &iov,
      .msg_iovlen = 1,
  };
  if (pid > 0) {
    mh.msg_control = control.buf;
    mh.msg_controllen = sizeof(control.buf);
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_CREDENTIALS;
    c->cmsg_len = CMSG_LEN(sizeof(struct ucred));
    struct ucred cred = {.pid = pid, .uid = getuid(), .gid = getgid()};
    memcpy(CMSG_DATA(c), &cred, sizeof(cred));
  }
  return sendmsg(fd, &mh, MSG_NOSIGNAL) < 0 ? -1 : 0;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: svcd-notify <notify-socket> <pid> <message>\n");
    return 2;
  }
  const char *sock = argv[1];
  char *end = NULL;
  long pid = strtol(argv[2], &end, 10);
  if (*argv[2] == '\0' || *end != '\0' || pid <= 0) {
    fprintf(stderr, "svcd-notify: bad pid '%s'\n", argv[2]);
    return 2;
  }
  size_t len = strlen(sock);
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  if (len == 0 || len >= sizeof(addr.sun_path) || (sock[0] != '/' && sock[0] != '@')) {
    fprintf(stderr, "svcd-notify: bad notify socket '%s'\n", sock);
    return 2;
  }
  memcpy(addr.sun_path, sock, len);
  if (sock[0] == '@') addr.sun_path[0] = '\0';
  socklen_t addrlen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + (sock[0] == '/' ? 1 : 0));

  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    fprintf(stderr, "svcd-notify: socket: %s\n", strerror(errno));
    return 1;
  }
  if (send_with_credentials(fd, &addr, addrlen, argv[3], (pid_t)pid) < 0) {
    int err = errno;
    /* Without CAP_SYS_ADMIN the kernel refuses another pid (EPERM): send as ourselves, MAINPID still says. */
    if (err != EPERM || send_with_credentials(fd, &addr, addrlen, argv[3], 0) < 0) {
      fprintf(stderr, "svcd-notify: send to %s: %s\n", sock, strerror(err == EPERM ? errno : err));
      close(fd);
      return 1;
    }
  }
  close(fd);
  return 0;
}
