/*
 * svcd-proxy: the forwarder of one proxy device (tcp, udp or unix) between two network namespaces.
 *
 *   svcd-proxy --listen-ns <pid> --listen <addr> --connect-ns <pid> --connect <addr>
 *              [--listen-uid N] [--listen-gid N] [--listen-mode 0660] [--drop-uid N] [--drop-gid N]
 *              [--proxy-protocol] [--exit-with <pid>] [--daemon --pid-file <path> --pid-key <key>]
 *
 * <pid> 0 is the forwarder's own namespaces, else those of that process (a container's init). <addr> is
 * tcp:<host>:<ports>, udp:<host>:<ports> (ports: 80, 80-82, 80,443; IPv6 hosts in brackets),
 * unix:/path or unix:@abstract. Listen ports map to connect ports in order; one connect port takes all.
 *
 * Setup, single-threaded: the namespace files are opened once; the process joins the listen side's
 * network namespace (and its mount namespace for a unix path, so the path is the container's own),
 * binds every listen socket, then joins the connect side's namespaces for good: every upstream socket
 * is made there, with no namespace switch per connection, and privileges can then be dropped
 * (--drop-uid/--drop-gid). Listen sockets keep the namespace they were made in.
 * Then `ready` on stdout (closed after); a setup error is `error: <reason>` on stderr and exit 1.
 * --daemon: once set up, it forks; the parent writes "<child pid>\n<key>\n" to the pid file (atomically),
 * prints `ready <child pid>` and exits 0, so that a short-lived spawner (svcd's spawn helper) runs it.
 * Running: epoll; tcp/unix streams are copied both ways through a buffer per direction (see BUF_SIZE for
 * why not splice), a half-close is passed on with shutdown(); udp has one connected upstream socket per client
 * address, closed after 60 s idle. --proxy-protocol: a HAProxy PROXY v2 header starts each upstream
 * connection, and each datagram of a udp flow. --exit-with: exits when that process does (pidfd).
 * SIGTERM/SIGINT: exit 0, removing the unix listen socket file it made.
 *
 *   svcd-proxy --launcher <socket> [--exit-with <pid>]
 *
 * A launcher (forks, prints `ready <pid>`, serves on in its own session): it listens on a unix socket
 * (mode 0600, root peers only) for launches, each the NUL-terminated arguments of a `--daemon` launch
 * written by the client, which then shuts down its side. It forks; the child runs those arguments as
 * the forwarder itself (no exec, no second fork: about a millisecond less than spawning svcd-proxy),
 * with stdout and stderr on the connection, so the client reads `ready <pid>` or `error: <reason>` up to
 * EOF. The pid file of such a forwarder has a third line, its start time (field 22 of /proc/<pid>/stat),
 * since its cmdline is the launcher's. Children are reaped by the kernel (SIGCHLD ignored). --exit-with:
 * the launcher exits when that process (svcd) does; the forwarders it launched serve on.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

#define MAX_PORTS 1024
/*
 * A stream's bytes go through a buffer per direction, read() in and send() out. Splicing through a pipe
 * (no copy to user space) was measured slower: 256 MiB over loopback to a reader doing 4 KiB reads (busybox
 * cat, bench/proxy-bench.ts's sink) went at about 2,050 MiB/s spliced through 512 KiB pipes and about
 * 2,600-3,000 MiB/s copied through 1 MiB buffers, for the same CPU time in the forwarder (likely because the
 * reader then receives a few large socket buffers, not one per spliced page; not verified). Smaller buffers
 * cost more system calls (64 KiB: about 1,650 MiB/s). The buffer is mapped on a direction's first bytes and only its
 * touched pages count: a request of a few KiB uses a page or two.
 */
#define BUF_SIZE (1024 * 1024)
#define UDP_IDLE_SEC 60
#define UDP_MAX 65535
#define PP2_MAX 232 /* 16-byte fixed part + 216 for unix addresses */
/*
 * An upstream connect not answered within CONNECT_RETRY_MS is dialled again (HAProxy's `retries` with a
 * short `timeout connect`: the target is on this host, answered in microseconds unless its listen queue is
 * full). A burst of clients to a service with a small backlog (busybox httpd listens with 9) has most
 * SYNs dropped, and the kernel would retry each after 1, 3, 7, 15 s. Each one waits CONNECT_RETRY_MS plus
 * up to as much again at random, so that the dials of a burst spread out instead of meeting the full
 * queue together once more. A unix socket whose backlog is full refuses at once (EAGAIN): dialled again
 * after UNIX_RETRY_MS. After CONNECT_GIVEUP_MS the client is closed.
 */
#define CONNECT_RETRY_MS 200
#define UNIX_RETRY_MS 20
#define CONNECT_GIVEUP_MS 60000

enum proto { P_TCP, P_UDP, P_UNIX };
enum kind { K_LISTEN, K_SIDE, K_FLOW, K_SIGNAL, K_EXIT };

struct endpoint {
  enum proto proto;
  int family; /* AF_INET, AF_INET6, AF_UNIX */
  char host[INET6_ADDRSTRLEN];
  int nports;
  uint16_t ports[MAX_PORTS];
  char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
  size_t pathlen;
  int abstract;
};

struct addr {
  struct sockaddr_storage ss;
  socklen_t len;
};

struct tag {
  enum kind kind;
};

struct listener {
  struct tag t;
  int fd;
  struct addr local, target;
};

struct conn;
struct side {
  struct tag t;
  struct conn *c;
};

/* Direction d moves bytes read from fd[d] through buffer d to fd[1-d]. fd[0] is the client, fd[1] upstream. */
struct conn {
  int fd[2];
  char *buf[2];              /* direction d's buffer (BUF_SIZE, mapped on first use), or NULL */
  size_t off[2], pending[2]; /* its unsent bytes: pending of them, from off */
  int eof[2], shut[2], gone[2];
  int connecting, closed;
  uint32_t mask[2];
  struct side side[2];
  struct addr src, dst; /* for the PROXY header */
  struct conn *next_dead;
  /* While connecting: where to, when the first and the last dial went out, and the dialling list's links. */
  const struct listener *l;
  long long first_ms, dial_ms, wait_ms;
  struct conn *dnext, *dprev;
  int dialing;
};

struct flow {
  struct tag t;
  int fd;
  struct listener *l;
  struct addr client;
  time_t last;
  struct flow *next;
};

/* Everything the loop needs: one of these, on main's stack. */
struct proxy {
  struct endpoint listen, connect;
  int proxy_protocol;
  int ep;
  struct listener listeners[MAX_PORTS];
  int nlisteners;
  struct flow *flows;
  struct conn *dead;
  struct conn *dialing; /* connections whose upstream connect is under way (see CONNECT_RETRY_MS) */
  int listen_mnt;       /* where the unix listen path lives, for its removal at exit; -1 if none */
};

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "error: %s\n", msg);
  exit(1);
}

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static time_t now_sec(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec;
}

/* A decimal number in [min, max], or -1. */
static long parse_num(const char *s, long min, long max, int base) {
  char *end;
  if (!*s || *s == '-' || *s == '+' || *s == ' ') return -1;
  errno = 0;
  long v = strtol(s, &end, base);
  if (errno || *end || v < min || v > max) return -1;
  return v;
}

/* "80", "80-82", "80,443,8000-8001" into ep->ports. */
static void parse_ports(struct endpoint *ep, const char *spec, const char *arg) {
  char buf[4096];
  if (strlen(spec) >= sizeof buf) fail("%s: port list too long", arg);
  strcpy(buf, spec);
  char *save = NULL;
  for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
    char *dash = strchr(item, '-');
    if (dash) *dash = 0;
    long a = parse_num(item, 1, 65535, 10), b = dash ? parse_num(dash + 1, 1, 65535, 10) : a;
    if (a < 0 || b < 0 || b < a) fail("%s: bad port '%s%s%s'", arg, item, dash ? "-" : "", dash ? dash + 1 : "");
    for (long p = a; p <= b; p++) {
      if (ep->nports == MAX_PORTS) fail("%s: more than %d ports", arg, MAX_PORTS);
      ep->ports[ep->nports++] = (uint16_t)p;
    }
  }
  if (ep->nports == 0) fail("%s: no port", arg);
}

static void parse_endpoint(struct endpoint *ep, const char *arg) {
  const char *rest;
  if (!strncmp(arg, "tcp:", 4))
    ep->proto = P_TCP, rest = arg + 4;
  else if (!strncmp(arg, "udp:", 4))
    ep->proto = P_UDP, rest = arg + 4;
  else if (!strncmp(arg, "unix:", 5))
    ep->proto = P_UNIX, rest = arg + 5;
  else
    fail("%s: address must start with tcp:, udp: or unix:", arg);
  if (ep->proto == P_UNIX) {
    ep->family = AF_UNIX;
    ep->abstract = rest[0] == '@';
    if (rest[0] != '/' && !ep->abstract) fail("%s: a unix address is an absolute path or @name", arg);
    const char *name = ep->abstract ? rest + 1 : rest;
    ep->pathlen = strlen(name);
    if (ep->pathlen == 0 || ep->pathlen >= sizeof ep->path)
      fail("%s: unix name empty or longer than %zu", arg, sizeof ep->path - 1);
    memcpy(ep->path, name, ep->pathlen + 1);
    return;
  }
  const char *host = rest, *colon;
  size_t hostlen;
  if (rest[0] == '[') {
    const char *close = strchr(rest, ']');
    if (!close || close[1] != ':') fail("%s: bad IPv6 address (expected [host]:port)", arg);
    host = rest + 1, hostlen = (size_t)(close - host), colon = close + 1;
    ep->family = AF_INET6;
  } else {
    colon = strchr(rest, ':');
    if (!colon) fail("%s: missing port", arg);
    hostlen = (size_t)(colon - rest);
    ep->family = AF_INET;
  }
  if (hostlen == 0 || hostlen >= sizeof ep->host) fail("%s: bad host", arg);
  memcpy(ep->host, host, hostlen);
  ep->host[hostlen] = 0;
  unsigned char tmp[sizeof(struct in6_addr)];
  if (inet_pton(ep->family, ep->host, tmp) != 1)
    fail("%s: '%s' is not an IP%s address", arg, ep->host, ep->family == AF_INET6 ? "v6" : "v4");
  parse_ports(ep, colon + 1, arg);
}

/* The socket address of port number `i` of an endpoint (unix: its path or abstract name). */
static void endpoint_addr(const struct endpoint *ep, int i, struct addr *a) {
  memset(a, 0, sizeof *a);
  if (ep->family == AF_UNIX) {
    struct sockaddr_un *un = (struct sockaddr_un *)&a->ss;
    un->sun_family = AF_UNIX;
    memcpy(un->sun_path + ep->abstract, ep->path, ep->pathlen);
    a->len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + ep->abstract + ep->pathlen + !ep->abstract);
  } else if (ep->family == AF_INET) {
    struct sockaddr_in *in = (struct sockaddr_in *)&a->ss;
    in->sin_family = AF_INET;
    in->sin_port = htons(ep->ports[i]);
    inet_pton(AF_INET, ep->host, &in->sin_addr);
    a->len = sizeof *in;
  } else {
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&a->ss;
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(ep->ports[i]);
    inet_pton(AF_INET6, ep->host, &in6->sin6_addr);
    a->len = sizeof *in6;
  }
}

/* "tcp:127.0.0.1:80", "udp:[::1]:53", "unix:/run/x" for error messages. */
static const char *endpoint_name(const struct endpoint *ep, int i, char *buf, size_t n) {
  const char *proto = ep->proto == P_TCP ? "tcp" : ep->proto == P_UDP ? "udp" : "unix";
  if (ep->family == AF_UNIX)
    snprintf(buf, n, "unix:%s%s", ep->abstract ? "@" : "", ep->path);
  else if (ep->family == AF_INET6)
    snprintf(buf, n, "%s:[%s]:%u", proto, ep->host, ep->ports[i]);
  else
    snprintf(buf, n, "%s:%s:%u", proto, ep->host, ep->ports[i]);
  return buf;
}

static int open_ns(long pid, const char *ns) {
  char p[64];
  snprintf(p, sizeof p, "/proc/%ld/ns/%s", pid, ns);
  int fd = open(p, O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("open %s: %s", p, strerror(errno));
  return fd;
}

static void join(int fd, int type, const char *what) {
  if (setns(fd, type) < 0) fail("setns %s: %s", what, strerror(errno));
  if (type == CLONE_NEWNS && chdir("/") < 0) fail("chdir /: %s", strerror(errno));
}

static void ep_add(struct proxy *px, int fd, uint32_t events, void *ptr) {
  struct epoll_event ev = {.events = events, .data.ptr = ptr};
  if (epoll_ctl(px->ep, EPOLL_CTL_ADD, fd, &ev) < 0) fail("epoll_ctl: %s", strerror(errno));
}

/* Bind and listen on port `i` of the listen endpoint (in the current namespaces). */
static void make_listener(struct proxy *px, int i, long uid, long gid, long mode) {
  struct listener *l = &px->listeners[px->nlisteners++];
  char name[160];
  endpoint_name(&px->listen, i, name, sizeof name);
  l->t.kind = K_LISTEN;
  endpoint_addr(&px->listen, i, &l->local);
  endpoint_addr(&px->connect, px->connect.nports == 1 || px->connect.proto == P_UNIX ? 0 : i, &l->target);
  int udp = px->listen.proto == P_UDP;
  l->fd = socket(px->listen.family, (udp ? SOCK_DGRAM : SOCK_STREAM) | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (l->fd < 0) fail("listen %s: socket: %s", name, strerror(errno));
  int one = 1;
  if (px->listen.family != AF_UNIX && setsockopt(l->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0)
    fail("listen %s: SO_REUSEADDR: %s", name, strerror(errno));
  int path = px->listen.family == AF_UNIX && !px->listen.abstract;
  if (path) {
    struct stat st;
    if (lstat(px->listen.path, &st) == 0) {
      if (!S_ISSOCK(st.st_mode)) fail("listen %s: exists and is not a socket", name);
      if (unlink(px->listen.path) < 0) fail("listen %s: remove stale socket: %s", name, strerror(errno));
    }
  }
  if (bind(l->fd, (struct sockaddr *)&l->local.ss, l->local.len) < 0) fail("listen %s: %s", name, strerror(errno));
  if (!udp && listen(l->fd, SOMAXCONN) < 0) fail("listen %s: %s", name, strerror(errno));
  if (path && (uid >= 0 || gid >= 0) && chown(px->listen.path, (uid_t)uid, (gid_t)gid) < 0)
    fail("listen %s: chown: %s", name, strerror(errno));
  if (path && mode >= 0 && chmod(px->listen.path, (mode_t)mode) < 0)
    fail("listen %s: chmod: %s", name, strerror(errno));
  ep_add(px, l->fd, EPOLLIN, l);
}

/* --- PROXY protocol v2 ------------------------------------------------------------------------ */

static const unsigned char PP2_SIG[12] = {0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A};

/* An IPv4 address as IPv4-mapped IPv6 (for a header whose two ends differ in family). */
static void as_v6(const struct addr *a, unsigned char out[16], uint16_t *port) {
  if (a->ss.ss_family == AF_INET6) {
    const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&a->ss;
    memcpy(out, &in6->sin6_addr, 16);
    *port = in6->sin6_port;
  } else {
    const struct sockaddr_in *in = (const struct sockaddr_in *)&a->ss;
    memset(out, 0, 10);
    out[10] = out[11] = 0xff;
    memcpy(out + 12, &in->sin_addr, 4);
    *port = in->sin_port;
  }
}

/* The header for a connection (or datagram) from `src` to `dst`; returns its length (<= PP2_MAX). */
static size_t pp2_header(unsigned char *b, const struct addr *src, const struct addr *dst, int dgram) {
  int sf = src->ss.ss_family, df = dst->ss.ss_family;
  size_t len = 0;
  memcpy(b, PP2_SIG, 12);
  b[12] = 0x21; /* version 2, PROXY */
  if (sf == AF_INET && df == AF_INET) {
    const struct sockaddr_in *s = (const struct sockaddr_in *)&src->ss, *d = (const struct sockaddr_in *)&dst->ss;
    b[13] = dgram ? 0x12 : 0x11;
    memcpy(b + 16, &s->sin_addr, 4), memcpy(b + 20, &d->sin_addr, 4);
    memcpy(b + 24, &s->sin_port, 2), memcpy(b + 26, &d->sin_port, 2);
    len = 12;
  } else if ((sf == AF_INET || sf == AF_INET6) && (df == AF_INET || df == AF_INET6)) {
    uint16_t sp, dp;
    b[13] = dgram ? 0x22 : 0x21;
    as_v6(src, b + 16, &sp), as_v6(dst, b + 32, &dp);
    memcpy(b + 48, &sp, 2), memcpy(b + 50, &dp, 2);
    len = 36;
  } else if (sf == AF_UNIX && df == AF_UNIX) {
    b[13] = dgram ? 0x32 : 0x31;
    memset(b + 16, 0, 216);
    size_t off = offsetof(struct sockaddr_un, sun_path);
    if (src->len > off)
      memcpy(b + 16, ((const struct sockaddr_un *)&src->ss)->sun_path, src->len - off > 108 ? 108 : src->len - off);
    if (dst->len > off)
      memcpy(b + 124, ((const struct sockaddr_un *)&dst->ss)->sun_path, dst->len - off > 108 ? 108 : dst->len - off);
    len = 216;
  } else {
    b[13] = 0x00; /* UNSPEC: the receiver uses the connection's own addresses */
  }
  b[14] = (unsigned char)(len >> 8), b[15] = (unsigned char)len;
  return 16 + len;
}

/* --- streams (tcp, unix) ------------------------------------------------------------------------ */

static void dialing_add(struct proxy *px, struct conn *c) {
  if (c->dialing) return;
  c->dprev = NULL, c->dnext = px->dialing;
  if (px->dialing) px->dialing->dprev = c;
  px->dialing = c, c->dialing = 1;
}

static void dialing_del(struct proxy *px, struct conn *c) {
  if (!c->dialing) return;
  if (c->dprev)
    c->dprev->dnext = c->dnext;
  else
    px->dialing = c->dnext;
  if (c->dnext) c->dnext->dprev = c->dprev;
  c->dialing = 0;
}

static void conn_close(struct proxy *px, struct conn *c) {
  if (c->closed) return;
  c->closed = 1;
  dialing_del(px, c);
  for (int i = 0; i < 2; i++) {
    if (c->fd[i] >= 0) close(c->fd[i]);
    if (c->buf[i]) munmap(c->buf[i], BUF_SIZE);
  }
  c->next_dead = px->dead; /* freed after this batch of events: a later event may still point here */
  px->dead = c;
}

/* Interest of each socket: input while its buffer is empty, output while the other buffer holds bytes. */
static void conn_update(struct proxy *px, struct conn *c) {
  for (int i = 0; i < 2; i++) {
    if (c->gone[i]) continue;
    uint32_t m = 0;
    if (i == 1 && c->connecting)
      m = EPOLLOUT;
    else {
      if (!c->eof[i] && c->pending[i] == 0 && !c->connecting) m |= EPOLLIN;
      if (c->pending[1 - i] > 0) m |= EPOLLOUT;
    }
    if (m == c->mask[i]) continue;
    struct epoll_event ev = {.events = m, .data.ptr = &c->side[i]};
    if (epoll_ctl(px->ep, EPOLL_CTL_MOD, c->fd[i], &ev) == 0) c->mask[i] = m;
  }
}

/* Move what can move in direction d without blocking; -1 on a broken connection. */
static int pump(struct conn *c, int d) {
  int src = c->fd[d], dst = c->fd[1 - d];
  for (;;) {
    int progress = 0;
    if (!c->eof[d] && c->pending[d] == 0) {
      if (!c->buf[d]) {
        void *m = mmap(NULL, BUF_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) return -1;
        c->buf[d] = m;
      }
      ssize_t n = read(src, c->buf[d], BUF_SIZE);
      if (n > 0)
        c->off[d] = 0, c->pending[d] = (size_t)n, progress = 1;
      else if (n == 0)
        c->eof[d] = 1, progress = 1;
      else if (errno != EAGAIN && errno != EINTR)
        return -1;
    }
    if (c->pending[d] > 0 && !c->shut[d]) {
      ssize_t n = send(dst, c->buf[d] + c->off[d], c->pending[d], MSG_NOSIGNAL);
      if (n > 0)
        c->off[d] += (size_t)n, c->pending[d] -= (size_t)n, progress = 1;
      else if (n < 0 && errno != EAGAIN && errno != EINTR)
        return -1;
    }
    if (c->eof[d] && c->pending[d] == 0 && !c->shut[d]) {
      shutdown(dst, SHUT_WR);
      c->shut[d] = 1;
    }
    if (!progress) return 0;
  }
}

static void conn_upstream_ready(struct proxy *px, struct conn *c) {
  int err = 0;
  socklen_t len = sizeof err;
  if (getsockopt(c->fd[1], SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err) return conn_close(px, c);
  c->connecting = 0;
  dialing_del(px, c);
  if (px->proxy_protocol) {
    unsigned char h[PP2_MAX];
    size_t n = pp2_header(h, &c->src, &c->dst, 0);
    if (send(c->fd[1], h, n, MSG_NOSIGNAL) != (ssize_t)n) return conn_close(px, c);
  }
}

static void conn_event(struct proxy *px, struct side *s, uint32_t events) {
  struct conn *c = s->c;
  int i = (int)(s - c->side);
  if (c->closed) return;
  if (events & EPOLLERR) return conn_close(px, c);
  if (c->connecting) {
    if (i == 1) conn_upstream_ready(px, c);
    if (c->closed || c->connecting) return;
  }
  if (pump(c, 0) < 0 || pump(c, 1) < 0) return conn_close(px, c);
  if ((events & EPOLLHUP) && c->eof[i] && !c->gone[i]) {
    /* the peer on this side is gone both ways: nothing more goes to it, nothing more comes from the other side */
    epoll_ctl(px->ep, EPOLL_CTL_DEL, c->fd[i], NULL);
    c->gone[i] = 1;
    c->shut[1 - i] = c->eof[1 - i] = 1;
    c->pending[1 - i] = 0;
  }
  if (c->shut[0] && c->shut[1]) return conn_close(px, c);
  conn_update(px, c);
}

/*
 * (Re)dial c's upstream: a fresh socket connecting to the target, watched for its answer. 0 when under
 * way (or, for a unix target whose backlog is full, when it is to be dialled again), -1 on a failure.
 */
static int dial(struct proxy *px, struct conn *c) {
  if (c->fd[1] >= 0) epoll_ctl(px->ep, EPOLL_CTL_DEL, c->fd[1], NULL), close(c->fd[1]), c->fd[1] = -1;
  int family = c->l->target.ss.ss_family, one = 1;
  if ((c->fd[1] = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0) return -1;
  if (family != AF_UNIX) setsockopt(c->fd[1], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  c->dial_ms = now_ms();
  c->wait_ms = family == AF_UNIX ? UNIX_RETRY_MS : CONNECT_RETRY_MS + random() % (CONNECT_RETRY_MS + 1);
  if (connect(c->fd[1], (struct sockaddr *)&c->l->target.ss, c->l->target.len) < 0 && errno != EINPROGRESS) {
    int again = family == AF_UNIX && errno == EAGAIN;
    close(c->fd[1]), c->fd[1] = -1;
    return again ? 0 : -1;
  }
  c->mask[1] = EPOLLOUT;
  struct epoll_event ev = {.events = EPOLLOUT, .data.ptr = &c->side[1]};
  return epoll_ctl(px->ep, EPOLL_CTL_ADD, c->fd[1], &ev);
}

/* Dial again what has waited too long for its upstream; close what waited for good. */
static void redial_late(struct proxy *px) {
  long long t = now_ms();
  for (struct conn *c = px->dialing, *next; c; c = next) {
    next = c->dnext;
    if (t - c->first_ms >= CONNECT_GIVEUP_MS)
      conn_close(px, c);
    else if (t - c->dial_ms >= c->wait_ms && dial(px, c) < 0)
      conn_close(px, c);
  }
}

static void accept_stream(struct proxy *px, struct listener *l) {
  for (;;) {
    struct addr peer = {.len = sizeof peer.ss};
    int fd = accept4(l->fd, (struct sockaddr *)&peer.ss, &peer.len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return; /* EAGAIN, or out of descriptors for now */
    struct conn *c = calloc(1, sizeof *c);
    if (!c) {
      close(fd);
      return;
    }
    c->fd[0] = fd, c->fd[1] = -1, c->src = peer;
    c->dst.len = sizeof c->dst.ss;
    if (getsockname(fd, (struct sockaddr *)&c->dst.ss, &c->dst.len) < 0) c->dst = l->local;
    int one = 1;
    for (int i = 0; i < 2; i++) c->side[i].t.kind = K_SIDE, c->side[i].c = c;
    if (peer.ss.ss_family != AF_UNIX) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    /* The client's side is watched for nothing until the upstream answers (its bytes wait in its socket). */
    struct epoll_event ev = {.events = 0, .data.ptr = &c->side[0]};
    c->connecting = 1, c->l = l, c->first_ms = now_ms();
    if (epoll_ctl(px->ep, EPOLL_CTL_ADD, fd, &ev) < 0 || dial(px, c) < 0) {
      conn_close(px, c);
      continue;
    }
    dialing_add(px, c);
  }
}

/* --- datagrams (udp) ----------------------------------------------------------------------------- */

static int same_addr(const struct addr *a, const struct addr *b) {
  return a->len == b->len && !memcmp(&a->ss, &b->ss, a->len);
}

static struct flow *flow_for(struct proxy *px, struct listener *l, const struct addr *client) {
  for (struct flow *f = px->flows; f; f = f->next)
    if (f->l == l && same_addr(&f->client, client)) return f;
  int fd = socket(l->target.ss.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return NULL;
  struct flow *f = calloc(1, sizeof *f);
  if (!f || connect(fd, (struct sockaddr *)&l->target.ss, l->target.len) < 0) {
    free(f);
    close(fd);
    return NULL;
  }
  f->t.kind = K_FLOW, f->fd = fd, f->l = l, f->client = *client;
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = f};
  if (epoll_ctl(px->ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
    close(fd);
    free(f);
    return NULL;
  }
  f->next = px->flows, px->flows = f;
  return f;
}

static void udp_from_client(struct proxy *px, struct listener *l, unsigned char *buf) {
  for (;;) {
    struct addr client = {.len = sizeof client.ss};
    size_t hlen = 0;
    ssize_t n = recvfrom(l->fd, buf + PP2_MAX, UDP_MAX, 0, (struct sockaddr *)&client.ss, &client.len);
    if (n < 0) return;
    struct flow *f = flow_for(px, l, &client);
    if (!f) continue;
    f->last = now_sec();
    if (px->proxy_protocol) {
      unsigned char h[PP2_MAX];
      hlen = pp2_header(h, &client, &l->local, 1);
      memcpy(buf + PP2_MAX - hlen, h, hlen);
    }
    send(f->fd, buf + PP2_MAX - hlen, (size_t)n + hlen, MSG_NOSIGNAL);
  }
}

static void udp_from_upstream(struct flow *f, unsigned char *buf) {
  for (;;) {
    ssize_t n = recv(f->fd, buf, UDP_MAX, 0);
    if (n < 0 && errno == ECONNREFUSED) continue; /* an earlier datagram found no listener */
    if (n < 0) return;
    f->last = now_sec();
    sendto(f->l->fd, buf, (size_t)n, MSG_NOSIGNAL, (struct sockaddr *)&f->client.ss, f->client.len);
  }
}

static void expire_flows(struct proxy *px) {
  time_t now = now_sec();
  for (struct flow **p = &px->flows; *p;) {
    struct flow *f = *p;
    if (now - f->last < UDP_IDLE_SEC) {
      p = &f->next;
      continue;
    }
    *p = f->next;
    close(f->fd);
    free(f);
  }
}

/* --- setup and loop ------------------------------------------------------------------------------ */

static void cleanup(struct proxy *px) {
  if (px->listen.proto != P_UNIX || px->listen.abstract) return;
  if (px->listen_mnt >= 0 && setns(px->listen_mnt, CLONE_NEWNS) < 0) return;
  struct stat st;
  if (lstat(px->listen.path, &st) == 0 && S_ISSOCK(st.st_mode)) unlink(px->listen.path);
}

static const char *USAGE =
    "usage: svcd-proxy --listen-ns <pid> --listen <addr> --connect-ns <pid> --connect <addr> [--listen-uid N] "
    "[--listen-gid N]\n"
    "                  [--listen-mode 0660] [--drop-uid N] [--drop-gid N] [--proxy-protocol] [--exit-with <pid>]\n"
    "                  [--daemon --pid-file <path> --pid-key <key>]";

/* security.uid/gid: drop to them; the reason when the kernel refuses, else NULL. */
static const char *drop_privileges(long duid, long dgid, char *why, size_t n) {
  if (dgid < 0 && duid < 0) return NULL;
  if (setgroups(0, NULL) < 0) return snprintf(why, n, "setgroups: %s", strerror(errno)), why;
  if (dgid >= 0 && setresgid((gid_t)dgid, (gid_t)dgid, (gid_t)dgid) < 0)
    return snprintf(why, n, "drop to gid %ld: %s", dgid, strerror(errno)), why;
  if (duid >= 0 && setresuid((uid_t)duid, (uid_t)duid, (uid_t)duid) < 0)
    return snprintf(why, n, "drop to uid %ld: %s", duid, strerror(errno)), why;
  return NULL;
}

/*
 * --daemon: fork; the child drops privileges and tells the parent over a pipe ("" = done, else the
 * reason); the parent, still privileged, writes "<child pid>\n<key>\n" to the pid file (atomically),
 * prints `ready <child pid>` and exits 0. Returns in the child only.
 */
/* The pid file, atomically: "<pid>\n<key>\n" and, when known, "<start time>\n". 0, or errno. */
static int write_pid_file(const char *pid_file, const char *pid_key, pid_t pid, const char *starttime) {
  char tmp[4096];
  if (snprintf(tmp, sizeof tmp, "%s.tmp", pid_file) >= (int)sizeof tmp) return ENAMETOOLONG;
  FILE *f = fopen(tmp, "w");
  if (!f || fprintf(f, "%d\n%s\n%s%s", (int)pid, pid_key, starttime ? starttime : "", starttime ? "\n" : "") < 0 ||
      fclose(f) != 0 || rename(tmp, pid_file) < 0)
    return errno ? errno : EIO;
  return 0;
}

/* This process's start time (field 22 of /proc/self/stat), into buf; buf is "" when it cannot be read. */
static void own_starttime(char *buf, size_t n) {
  char st[1024] = "";
  buf[0] = 0;
  FILE *f = fopen("/proc/self/stat", "r");
  if (!f) return;
  size_t got = fread(st, 1, sizeof st - 1, f);
  fclose(f);
  st[got] = 0;
  char *p = strrchr(st, ')'); /* the comm may hold spaces: fields count from after it (field 3 first) */
  for (int field = 2; p && field < 22; field++) p = strchr(p + 1, ' ');
  if (p) snprintf(buf, n, "%.*s", (int)strcspn(p + 1, " "), p + 1);
}

static void daemonize(const char *pid_file, const char *pid_key, long duid, long dgid) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) < 0) fail("pipe: %s", strerror(errno));
  pid_t child = fork();
  if (child < 0) fail("fork: %s", strerror(errno));
  char why[256] = "";
  if (child == 0) {
    close(p[0]);
    setsid();
    const char *err = drop_privileges(duid, dgid, why, sizeof why);
    if (err && write(p[1], err, strlen(err)) < 0) _exit(1);
    close(p[1]);
    if (err) _exit(1);
    return;
  }
  close(p[1]);
  ssize_t got = read(p[0], why, sizeof why - 1);
  close(p[0]);
  if (got > 0) why[got] = 0, fail("%s", why);
  int e = write_pid_file(pid_file, pid_key, child, NULL);
  if (e) kill(child, SIGKILL), fail("--pid-file %s: %s", pid_file, strerror(e));
  printf("ready %d\n", (int)child);
  fflush(stdout);
  _exit(0);
}

/* One forwarder. `launched`: a launcher's child, which is the forwarder itself (see --launcher). */
static int run(int argc, char **argv, int launched) {
  static struct proxy px; /* large (the listeners): not on the stack */
  static unsigned char buf[PP2_MAX + UDP_MAX];
  long lns = -1, cns = -1, luid = -1, lgid = -1, lmode = -1, duid = -1, dgid = -1, exit_with = -1;
  const char *laddr = NULL, *caddr = NULL, *pid_file = NULL, *pid_key = NULL;
  int daemon_mode = 0;
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    long *num = !strcmp(o, "--listen-ns")    ? &lns
                : !strcmp(o, "--connect-ns") ? &cns
                : !strcmp(o, "--listen-uid") ? &luid
                : !strcmp(o, "--listen-gid") ? &lgid
                : !strcmp(o, "--drop-uid")   ? &duid
                : !strcmp(o, "--drop-gid")   ? &dgid
                : !strcmp(o, "--exit-with")  ? &exit_with
                                             : NULL;
    if (!strcmp(o, "--proxy-protocol")) {
      px.proxy_protocol = 1;
      continue;
    }
    if (!strcmp(o, "--daemon")) {
      daemon_mode = 1;
      continue;
    }
    if (!num && strcmp(o, "--listen") && strcmp(o, "--connect") && strcmp(o, "--listen-mode") &&
        strcmp(o, "--pid-file") && strcmp(o, "--pid-key"))
      fail("unknown argument '%s'\n%s", o, USAGE);
    if (!v) fail("%s needs a value", o);
    i++;
    if (!strcmp(o, "--pid-file"))
      pid_file = v;
    else if (!strcmp(o, "--pid-key"))
      pid_key = v;
    else if (!strcmp(o, "--listen"))
      laddr = v;
    else if (!strcmp(o, "--connect"))
      caddr = v;
    else if (!strcmp(o, "--listen-mode")) {
      if ((lmode = parse_num(v, 0, 07777, 8)) < 0) fail("--listen-mode: '%s' is not an octal mode", v);
    } else if ((*num = parse_num(v, num == &exit_with ? 1 : 0,
                                 num == &lns || num == &cns || num == &exit_with ? 4194304 : 4294967294L, 10)) < 0)
      fail("%s: '%s' is not a valid number", o, v);
  }
  if (lns < 0 || cns < 0 || !laddr || !caddr)
    fail("--listen-ns, --listen, --connect-ns and --connect are required\n%s", USAGE);
  if (daemon_mode != (pid_file != NULL) || daemon_mode != (pid_key != NULL) || (pid_key && strchr(pid_key, '\n')))
    fail("--daemon, --pid-file and --pid-key go together (a key without line breaks)");
  parse_endpoint(&px.listen, laddr);
  parse_endpoint(&px.connect, caddr);
  int ldgram = px.listen.proto == P_UDP, cdgram = px.connect.proto == P_UDP;
  if (ldgram != cdgram) fail("cannot forward %s to %s (udp goes to udp only)", laddr, caddr);
  if (px.listen.proto == P_UNIX && px.connect.nports > 1)
    fail("%s: a unix listen address takes a single connect port", caddr);
  if (px.connect.nports > 1 && px.connect.nports != px.listen.nports)
    fail("%d listen ports and %d connect ports: they map one to one, or one connect port takes them all",
         px.listen.nports, px.connect.nports);

  setsid(); /* own session: no signal to svcd's process group reaches it; fails only if already a leader */
  signal(SIGPIPE, SIG_IGN);
  sigset_t sigs;
  sigemptyset(&sigs), sigaddset(&sigs, SIGTERM), sigaddset(&sigs, SIGINT);
  if (sigprocmask(SIG_BLOCK, &sigs, NULL) < 0) fail("sigprocmask: %s", strerror(errno));
  int sfd = signalfd(-1, &sigs, SFD_NONBLOCK | SFD_CLOEXEC);
  if (sfd < 0) fail("signalfd: %s", strerror(errno));
  int pidfd = -1;
  if (exit_with > 0 && (pidfd = (int)syscall(SYS_pidfd_open, (pid_t)exit_with, 0)) < 0)
    fail("--exit-with %ld: %s", exit_with, strerror(errno));

  int lpath = px.listen.proto == P_UNIX && !px.listen.abstract,
      cpath = px.connect.proto == P_UNIX && !px.connect.abstract;
  int self_net = open_ns(getpid(), "net"), self_mnt = open_ns(getpid(), "mnt");
  int lnet = lns ? open_ns(lns, "net") : -1, cnet = cns ? open_ns(cns, "net") : -1;
  int lmnt = lns && lpath ? open_ns(lns, "mnt") : -1, cmnt = cns && cpath ? open_ns(cns, "mnt") : -1;
  px.listen_mnt = lpath ? (lmnt >= 0 ? lmnt : self_mnt) : -1;

  srandom((unsigned)getpid() ^ (unsigned)now_ms()); /* the jitter of dials made again (CONNECT_RETRY_MS) */
  px.ep = epoll_create1(EPOLL_CLOEXEC);
  if (px.ep < 0) fail("epoll_create1: %s", strerror(errno));
  static struct tag sig_tag = {K_SIGNAL}, exit_tag = {K_EXIT};
  ep_add(&px, sfd, EPOLLIN, &sig_tag);
  if (pidfd >= 0) ep_add(&px, pidfd, EPOLLIN, &exit_tag);

  if (lnet >= 0) join(lnet, CLONE_NEWNET, "listen network namespace");
  if (lmnt >= 0) join(lmnt, CLONE_NEWNS, "listen mount namespace");
  for (int i = 0; i < (px.listen.proto == P_UNIX ? 1 : px.listen.nports); i++) make_listener(&px, i, luid, lgid, lmode);
  join(cnet >= 0 ? cnet : self_net, CLONE_NEWNET, "connect network namespace");
  if (cmnt >= 0)
    join(cmnt, CLONE_NEWNS, "connect mount namespace");
  else if (lmnt >= 0)
    join(self_mnt, CLONE_NEWNS, "own mount namespace");
  if (daemon_mode && launched) {
    char start[32], why[256];
    own_starttime(start, sizeof start);
    if (!start[0]) fail("cannot read its own start time");
    int e = write_pid_file(pid_file, pid_key, getpid(), start);
    if (e) fail("--pid-file %s: %s", pid_file, strerror(e));
    const char *err = drop_privileges(duid, dgid, why, sizeof why);
    if (err) unlink(pid_file), fail("%s", err);
    printf("ready %d\n", (int)getpid()), fflush(stdout);
  } else if (daemon_mode) {
    daemonize(pid_file, pid_key, duid, dgid); /* returns in the child only */
    /* A signalfd wakes the epoll sets of the process that made it: the child needs its own. */
    epoll_ctl(px.ep, EPOLL_CTL_DEL, sfd, NULL);
    close(sfd);
    if ((sfd = signalfd(-1, &sigs, SFD_NONBLOCK | SFD_CLOEXEC)) < 0) return 1;
    ep_add(&px, sfd, EPOLLIN, &sig_tag);
  } else {
    char why[256];
    const char *err = drop_privileges(duid, dgid, why, sizeof why);
    if (err) fail("%s", err);
    printf("ready\n"), fflush(stdout);
  }
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0)
    return 1; /* the supervisor stops reading now */
  close(null);

  time_t last_sweep = now_sec();
  for (;;) {
    struct epoll_event evs[64];
    int n = epoll_wait(px.ep, evs, 64, px.dialing ? 10 : px.flows ? 1000 : -1);
    if (n < 0 && errno != EINTR) return 1;
    for (int i = 0; i < n; i++) {
      struct tag *t = evs[i].data.ptr;
      switch (t->kind) {
      case K_SIGNAL:
      case K_EXIT:
        cleanup(&px);
        return 0;
      case K_LISTEN: {
        struct listener *l = (struct listener *)t;
        if (px.listen.proto == P_UDP)
          udp_from_client(&px, l, buf);
        else
          accept_stream(&px, l);
        break;
      }
      case K_SIDE:
        conn_event(&px, (struct side *)t, evs[i].events);
        break;
      case K_FLOW:
        udp_from_upstream((struct flow *)t, buf);
        break;
      }
    }
    while (px.dead) {
      struct conn *c = px.dead;
      px.dead = c->next_dead;
      free(c);
    }
    if (px.dialing) redial_late(&px);
    if (px.flows && now_sec() - last_sweep >= 1) expire_flows(&px), last_sweep = now_sec();
  }
}

/* --launcher: see the top of the file. Returns only on a setup error (exit 1 then). */
static int launcher(const char *path, long exit_with) {
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof sa.sun_path) fail("--launcher %s: the socket path is too long", path);
  strcpy(sa.sun_path, path);
  int ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (ls < 0) fail("socket: %s", strerror(errno));
  unlink(path);
  mode_t old = umask(077);
  if (bind(ls, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(ls, 128) < 0)
    fail("--launcher %s: %s", path, strerror(errno));
  umask(old);
  struct stat bound; /* the socket file as bound: removed at exit only if it is still this one */
  if (stat(path, &bound) < 0) fail("--launcher %s: %s", path, strerror(errno));
  int pidfd = -1;
  if (exit_with > 0 && (pidfd = (int)syscall(SYS_pidfd_open, (pid_t)exit_with, 0)) < 0)
    fail("--exit-with %ld: %s", exit_with, strerror(errno));
  pid_t child = fork();
  if (child < 0) fail("fork: %s", strerror(errno));
  if (child > 0) {
    printf("ready %d\n", (int)child);
    fflush(stdout);
    _exit(0);
  }
  setsid();
  prctl(PR_SET_NAME, "svcd-proxy-lnch"); /* its children, the forwarders, call themselves svcd-proxy again */
  signal(SIGCHLD, SIG_IGN);
  signal(SIGPIPE, SIG_IGN);
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0) return 1;
  close(null);
  static char req[65536];
  for (;;) {
    struct pollfd pf[2] = {{.fd = ls, .events = POLLIN}, {.fd = pidfd, .events = POLLIN}};
    if (poll(pf, pidfd >= 0 ? 2 : 1, -1) < 0 && errno != EINTR) return 1;
    if (pidfd >= 0 && pf[1].revents) {
      /* svcd is gone: the socket goes with the launcher (unless a newer launcher has bound the path since) */
      struct stat now;
      if (stat(path, &now) == 0 && now.st_ino == bound.st_ino && now.st_dev == bound.st_dev) unlink(path);
      _exit(0);
    }
    if (!(pf[0].revents & POLLIN)) continue;
    int c = accept4(ls, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (c >= 0) fcntl(c, F_SETFL, 0); /* blocking reads, with the timeout below */
    if (c < 0) {
      if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE) continue;
      return 1;
    }
    struct ucred cr;
    socklen_t cl = sizeof cr;
    struct timeval tv = {.tv_sec = 5};
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    size_t n = 0;
    ssize_t r = 0;
    if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &cl) == 0 && cr.uid == 0)
      while (n < sizeof req && (r = read(c, req + n, sizeof req - n)) > 0) n += (size_t)r;
    if (r < 0 || n == 0 || n == sizeof req || req[n - 1] != 0) {
      close(c);
      continue;
    }
    pid_t p = fork();
    if (p == 0) {
      close(ls);
      prctl(PR_SET_NAME, "svcd-proxy");
      signal(SIGCHLD, SIG_DFL);
      static char *args[256];
      int argc = 0;
      args[argc++] = "svcd-proxy";
      for (size_t i = 0; i < n && argc < 255; i += strlen(req + i) + 1) args[argc++] = req + i;
      args[argc] = NULL;
      if (dup2(c, 1) < 0 || dup2(c, 2) < 0) _exit(1);
      close(c);
      exit(run(argc, args, 1));
    }
    if (p < 0) {
      dprintf(c, "error: fork: %s\n", strerror(errno));
    }
    close(c);
  }
}

int main(int argc, char **argv) {
  if (argc >= 3 && !strcmp(argv[1], "--launcher")) {
    long exit_with = -1;
    if (argc == 5 && !strcmp(argv[3], "--exit-with")) exit_with = parse_num(argv[4], 1, 4194304, 10);
    if (exit_with < 0 && argc != 3) fail("usage: svcd-proxy --launcher <socket> [--exit-with <pid>]");
    return launcher(argv[2], exit_with);
  }
  return run(argc, argv, 0);
}
