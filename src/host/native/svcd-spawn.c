/*
 * svcd-spawn: the spawn helper. svcd starts it once and has it run every host command, so that svcd's
 * own large process is never forked for them (a fork from node blocks its event loop for ~0.7 ms per
 * command, page tables and all); this process is ~1 MiB, and a fork of it costs microseconds.
 *
 * It speaks frames over fd 3, a socket svcd made (src/host/spawn/frames.ts is the other end and says
 * what each frame holds): buffered commands (RUN, CANCEL → RESULT) and streamed processes with pipes
 * or a pseudo-terminal (SPAWN → SPAWNED or SPAWN_ERROR, then DATA, EOF, STDIN_ACK and EXIT, driven by
 * STDIN, STDIN_END, PAUSE, RESUME, KILL and RESIZE).
 *   frame := u32 length (of what follows) | u8 type | u32 id | body          (little endian)
 *   str   := u32 length | bytes;  strs := u32 count | str...
 * One thread, one poll() loop; a signalfd reports exits; every descriptor it opens is close-on-exec,
 * so a command inherits only its three standard streams. When the socket closes (svcd exited, even by
 * SIGKILL) or on SIGTERM, it ends what it started (SIGTERM; SIGHUP for a terminal) and exits.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/close_range.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

enum {
  F_RUN = 1,
  F_CANCEL,
  F_SPAWN,
  F_STDIN,
  F_STDIN_END,
  F_PAUSE,
  F_RESUME,
  F_KILL,
  F_RESIZE,
  F_RESULT = 101,
  F_SPAWNED,
  F_SPAWN_ERROR,
  F_DATA,
  F_EOF,
  F_STDIN_ACK,
  F_EXIT,
};
/* RESULT and EXIT flags */
enum { R_SPAWN_FAILED = 1, R_TIMED_OUT = 2, R_CANCELED = 4, R_EXITED = 8, R_SIGNALED = 16 };

#define CTL 3
#define CHUNK 65536
#define KILL_GRACE_MS 5000 /* SIGTERM (timeout, cancel) → SIGKILL */
#define PIPE_GRACE_MS 200  /* a command that exited may leave a daemon holding its pipes */
#define QUIT_GRACE_MS 100
/*
 * A terminal's first input waits until the program took the terminal out of canonical mode (lxc-attach
 * and lxc-console make it raw with TCSAFLUSH, which discards whatever input was already there: the
 * first line of `echo cmd | lxc exec -t` was lost), or this long at most.
 */
#define TTY_SETTLE_MS 1000
#define TTY_LOOK_MS 5

/* A blocking connection to the unix socket at `path` (close-on-exec until dup2), or -1 with errno set. */
static int connect_unix(const char *path) {
  struct sockaddr_un a;
  memset(&a, 0, sizeof a);
  a.sun_family = AF_UNIX;
  if (strlen(path) >= sizeof a.sun_path) {
    errno = ENAMETOOLONG;
    return -1;
  }
  strcpy(a.sun_path, path);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  while (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
    if (errno == EINTR) continue;
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

static void *xrealloc(void *p, size_t n) {
  void *q = realloc(p, n ? n : 1);
  if (!q) {
    fputs("svcd-spawn: out of memory\n", stderr);
    _exit(70);
  }
  return q;
}

struct buf {
  uint8_t *p;
  size_t len, cap, off; /* off: bytes already consumed from the front */
};
static void buf_add(struct buf *b, const void *d, size_t n) {
  if (b->len + n > b->cap) {
    if (b->off) { /* compact first */
      memmove(b->p, b->p + b->off, b->len - b->off);
      b->len -= b->off;
      b->off = 0;
    }
    if (b->len + n > b->cap) {
      b->cap = (b->len + n) * 2;
      b->p = xrealloc(b->p, b->cap);
    }
  }
  memcpy(b->p + b->len, d, n);
  b->len += n;
}
static size_t buf_pending(const struct buf *b) {
  return b->len - b->off;
}
static void buf_consume(struct buf *b, size_t n) {
  b->off += n;
  if (b->off == b->len) b->off = b->len = 0;
}
static void buf_free(struct buf *b) {
  free(b->p);
  memset(b, 0, sizeof *b);
}

static int64_t now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* ---- frames to svcd ------------------------------------------------------------------------- */

static struct buf out; /* bytes for svcd not yet written */

static void put32(uint8_t *p, uint32_t v) {
  p[0] = v & 0xff, p[1] = (v >> 8) & 0xff, p[2] = (v >> 16) & 0xff, p[3] = v >> 24;
}
static uint32_t get32(const uint8_t *p) {
  return p[0] | (p[1] << 8) | (p[2] << 16) | ((uint32_t)p[3] << 24);
}

/* A frame: type, id, then `n` parts (pointer, length). */
static void send_frame(uint8_t type, uint32_t id, const void *a, size_t an, const void *b, size_t bn) {
  uint8_t h[9];
  put32(h, (uint32_t)(5 + an + bn));
  h[4] = type;
  put32(h + 5, id);
  buf_add(&out, h, 9);
  if (an) buf_add(&out, a, an);
  if (bn) buf_add(&out, b, bn);
}
static void send_u32(uint8_t type, uint32_t id, uint32_t v) {
  uint8_t b[4];
  put32(b, v);
  send_frame(type, id, b, 4, NULL, 0);
}
static void send_u8(uint8_t type, uint32_t id, uint8_t v) {
  send_frame(type, id, &v, 1, NULL, 0);
}
static void send_status(uint8_t type, uint32_t id, uint8_t flags, int status, int err, const struct buf *o,
                        const struct buf *e) {
  uint8_t b[17];
  if (WIFEXITED(status)) flags |= R_EXITED;
  if (WIFSIGNALED(status)) flags |= R_SIGNALED;
  b[0] = flags;
  put32(b + 1, (flags & R_EXITED) ? (uint32_t)WEXITSTATUS(status) : 0);
  put32(b + 5, (flags & R_SIGNALED) ? (uint32_t)WTERMSIG(status) : 0);
  put32(b + 9, (uint32_t)err);
  if (type == F_EXIT) return send_frame(type, id, b, 13, NULL, 0);
  size_t on = o ? buf_pending(o) : 0, en = e ? buf_pending(e) : 0;
  put32(b + 13, (uint32_t)on);
  uint8_t h[9];
  put32(h, (uint32_t)(5 + 17 + on + en));
  h[4] = type;
  put32(h + 5, id);
  buf_add(&out, h, 9);
  buf_add(&out, b, 17);
  if (on) buf_add(&out, o->p + o->off, on);
  if (en) buf_add(&out, e->p + e->off, en);
}

/* ---- processes ------------------------------------------------------------------------------ */

enum kind { K_RUN, K_PIPES, K_PTY };
struct ack {
  uint32_t seq;
  uint64_t end; /* acknowledged once this many stdin bytes in all were written */
};
struct proc {
  uint32_t id;
  enum kind kind;
  pid_t pid;
  int reaped, status, done;
  int fd[3]; /* fd[0]: stdin (write end; the terminal for a PTY); fd[1], fd[2]: output read ends (fd[1] the terminal for
                a PTY) */
  int paused[3];
  struct buf inq; /* stdin bytes not yet written */
  uint64_t in_written, in_queued;
  struct ack *acks;
  size_t nacks, capacks;
  int stdin_end;      /* close stdin once inq is written */
  struct buf obuf[3]; /* RUN: the output so far */
  int timed_out, canceled;
  int64_t t_timeout, t_kill, t_grace; /* deadlines, 0 = none */
  int64_t t_tty; /* PTY: input is held until the terminal is raw, or until then (0: no longer held) */
};

static struct proc **procs;
static size_t nprocs, capprocs;
static int quitting;
static int64_t quit_at;

static struct proc *find(uint32_t id) {
  for (size_t i = 0; i < nprocs; i++)
    if (procs[i]->id == id && !procs[i]->done) return procs[i];
  return NULL;
}
static struct proc *add_proc(uint32_t id, enum kind k) {
  struct proc *p = calloc(1, sizeof *p);
  if (!p) _exit(70);
  p->id = id;
  p->kind = k;
  p->fd[0] = p->fd[1] = p->fd[2] = -1;
  if (nprocs == capprocs) {
    capprocs = capprocs ? capprocs * 2 : 16;
    procs = xrealloc(procs, capprocs * sizeof *procs);
  }
  procs[nprocs++] = p;
  return p;
}
static void close_fd(struct proc *p, int i) {
  if (p->fd[i] < 0) return;
  /* a terminal is one descriptor in fd[0] and fd[1] */
  int shared = p->kind == K_PTY;
  close(p->fd[i]);
  if (shared)
    p->fd[0] = p->fd[1] = -1;
  else
    p->fd[i] = -1;
}
/* Acknowledge every stdin write up to what was written; `all`: the rest too (stdin is gone). */
static void ack_stdin(struct proc *p, int all) {
  size_t k = 0;
  while (k < p->nacks && (all || p->acks[k].end <= p->in_written)) send_u32(F_STDIN_ACK, p->id, p->acks[k++].seq);
  memmove(p->acks, p->acks + k, (p->nacks - k) * sizeof *p->acks);
  p->nacks -= k;
}
static void drop_stdin(struct proc *p) {
  ack_stdin(p, 1);
  buf_free(&p->inq);
  if (p->kind != K_PTY) close_fd(p, 0);
}
static void signal_proc(struct proc *p, int sig) {
  if (p->pid > 0 && !p->reaped) kill(p->pid, sig);
}
/* The end of a process that exited: its last output, then its result or exit. */
static void finish(struct proc *p) {
  if (p->kind == K_PIPES)
    for (int i = 1; i < 3; i++)
      if (p->fd[i] >= 0) send_u8(F_EOF, p->id, (uint8_t)i);
  for (int i = 0; i < 3; i++) close_fd(p, i);
  if (p->kind == K_RUN) {
    uint8_t flags = (p->timed_out ? R_TIMED_OUT : 0) | (p->canceled ? R_CANCELED : 0);
    send_status(F_RESULT, p->id, flags, p->status, 0, &p->obuf[1], &p->obuf[2]);
  } else {
    if (p->kind == K_PTY) send_u8(F_EOF, p->id, 1);
    send_status(F_EXIT, p->id, 0, p->status, 0, NULL, NULL);
  }
  ack_stdin(p, 1);
  p->done = 1;
}
static void free_done(void) {
  size_t j = 0;
  for (size_t i = 0; i < nprocs; i++) {
    struct proc *p = procs[i];
    if (!p->done) {
      procs[j++] = p;
      continue;
    }
    buf_free(&p->inq);
    for (int k = 0; k < 3; k++) buf_free(&p->obuf[k]);
    free(p->acks);
    free(p);
  }
  nprocs = j;
}

/* Read what a process wrote on fd[i]; at its end (or an error, EIO from a terminal) close it. */
static void read_output(struct proc *p, int i) {
  uint8_t b[CHUNK];
  for (int rounds = 0; p->fd[i] >= 0 && rounds < 4; rounds++) {
    ssize_t n = read(p->fd[i], b, sizeof b);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n > 0) {
      if (p->kind == K_RUN)
        buf_add(&p->obuf[i], b, (size_t)n);
      else
        send_frame(F_DATA, p->id, (uint8_t[]){(uint8_t)i}, 1, b, (size_t)n);
      if (p->kind != K_RUN && (p->paused[i] || buf_pending(&out) > 4 * CHUNK)) return;
      continue;
    }
    /* end of file, or an error */
    if (p->kind == K_PTY) {
      drop_stdin(p);
      close_fd(p, 1);
    } else {
      close_fd(p, i);
      if (p->kind == K_PIPES) send_u8(F_EOF, p->id, (uint8_t)i);
    }
    return;
  }
}
/* A terminal's input is held (TTY_SETTLE_MS) while its program has not made it raw yet. */
static int tty_held(struct proc *p) {
  if (p->kind != K_PTY || !p->t_tty) return 0;
  struct termios t;
  if (p->fd[0] < 0 || now_ms() >= p->t_tty || tcgetattr(p->fd[0], &t) != 0 || !(t.c_lflag & ICANON)) {
    p->t_tty = 0;
    return 0;
  }
  return 1;
}
static void write_stdin(struct proc *p) {
  if (buf_pending(&p->inq) && tty_held(p)) return;
  while (p->fd[0] >= 0 && buf_pending(&p->inq)) {
    ssize_t n = write(p->fd[0], p->inq.p + p->inq.off, buf_pending(&p->inq));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    if (n < 0) { /* EPIPE: the process closed its stdin; what was left is dropped */
      drop_stdin(p);
      return;
    }
    buf_consume(&p->inq, (size_t)n);
    p->in_written += (uint64_t)n;
  }
  ack_stdin(p, p->fd[0] < 0);
  if (p->stdin_end && !buf_pending(&p->inq) && p->kind != K_PTY) close_fd(p, 0);
}

/* ---- starting processes --------------------------------------------------------------------- */

/* A decoded SPAWN or RUN. */
struct start {
  char *file, *cwd, *copy_in, *stdio_path[3];
  char **argv, **envp;
  int stdio_kind[3]; /* 0 pipe, 1 ignore, 2 append to stdio_path, 3 a connection to the unix socket stdio_path */
  int pty, have_env, extend_env, have_uid, have_gid, bad;
  uint32_t uid, gid;
  uint16_t cols, rows;
  const uint8_t *input;
  size_t input_len;
  int has_input;
};

struct reader {
  const uint8_t *p;
  size_t n;
  int bad;
};
static uint32_t r_u32(struct reader *r) {
  if (r->n < 4) return r->bad = 1, 0;
  uint32_t v = get32(r->p);
  r->p += 4, r->n -= 4;
  return v;
}
static uint16_t r_u16(struct reader *r) {
  if (r->n < 2) return r->bad = 1, 0;
  uint16_t v = (uint16_t)(r->p[0] | (r->p[1] << 8));
  r->p += 2, r->n -= 2;
  return v;
}
static uint8_t r_u8(struct reader *r) {
  if (r->n < 1) return r->bad = 1, 0;
  uint8_t v = r->p[0];
  r->p++, r->n--;
  return v;
}
/* A string, NUL-terminated; one with a NUL inside cannot be an argument: bad. */
static char *r_str(struct reader *r, int *bad) {
  uint32_t n = r_u32(r);
  if (r->bad || r->n < n) return r->bad = 1, strdup("");
  char *s = xrealloc(NULL, (size_t)n + 1);
  memcpy(s, r->p, n);
  s[n] = 0;
  if (memchr(r->p, 0, n)) *bad = 1;
  r->p += n, r->n -= n;
  return s;
}
static char **r_strs(struct reader *r, int *bad) {
  uint32_t n = r_u32(r);
  if (r->bad || n > r->n / 4) {
    r->bad = 1;
    char **none = xrealloc(NULL, sizeof(char *));
    none[0] = NULL;
    return none;
  }
  char **v = xrealloc(NULL, ((size_t)n + 1) * sizeof *v);
  for (uint32_t i = 0; i < n; i++) v[i] = r_str(r, bad);
  v[n] = NULL;
  return v;
}
static void free_strs(char **v) {
  if (!v) return;
  for (char **s = v; *s; s++) free(*s);
  free(v);
}
static void free_start(struct start *s) {
  free(s->file), free(s->cwd), free(s->copy_in);
  for (int i = 0; i < 3; i++) free(s->stdio_path[i]);
  free_strs(s->argv), free_strs(s->envp);
}

/* The environment of a command: the helper's own (inherited from svcd) with `add` over it, or `add` alone. */
static char **merged_env(char **add, int extend, int pty) {
  size_t n = 0, m = 0;
  if (extend)
    for (char **e = environ; *e; e++) n++;
  for (char **e = add; e && *e; e++) m++;
  char **v = xrealloc(NULL, (n + m + 2) * sizeof *v);
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    const char *eq = strchr(environ[i], '=');
    size_t kl = eq ? (size_t)(eq - environ[i]) + 1 : strlen(environ[i]);
    int over = 0;
    for (char **a = add; a && *a && !over; a++) over = strncmp(*a, environ[i], kl) == 0;
    if (!over) v[k++] = environ[i];
  }
  int term = 0;
  for (size_t i = 0; i < m; i++) {
    v[k++] = add[i];
    term |= strncmp(add[i], "TERM=", 5) == 0;
  }
  for (size_t i = 0; i < k && !term; i++) term = strncmp(v[i], "TERM=", 5) == 0;
  if (pty && !term) v[k++] = "TERM=xterm"; /* as node-pty did (name: 'xterm') */
  v[k] = NULL;
  return v;
}

/*
 * `file` (a program name on PATH) run from an unlinked, read-only, root-only copy that this helper
 * keeps open, exec'd as /proc/<helper>/fd/<n>: `lxc-attach` copies itself into a sealed memfd and
 * executes that again on every start (about 2 ms here), unless it already runs from a memfd or from an
 * unlinked file, which is what the copy is. The self-copy guards the host binary against a container
 * root that is host root (CVE-2019-5736); svcd asks for the copy only for containers whose user
 * namespace does not map host root, whose root cannot write a host-root-owned file anyway. Made again
 * when the program on disk changes (an upgrade). NULL when it cannot be made: the caller runs `file`.
 */
struct copy {
  char *file, *path;
  dev_t dev;
  ino_t ino;
  off_t size;
  struct timespec mtime;
  int fd;
};
static struct copy *copies;
static size_t ncopies;

static const char *private_copy(const char *file, const char *dir) {
  char src[4096];
  struct stat st;
  int found = 0;
  if (strchr(file, '/')) {
    found = snprintf(src, sizeof src, "%s", file) < (int)sizeof src && stat(src, &st) == 0 && S_ISREG(st.st_mode);
  } else {
    const char *path = getenv("PATH");
    if (!path) path = "/usr/bin:/bin";
    for (const char *d = path; !found && *d;) {
      const char *e = strchr(d, ':');
      size_t dl = e ? (size_t)(e - d) : strlen(d);
      if (snprintf(src, sizeof src, "%.*s/%s", (int)dl, d, file) < (int)sizeof src)
        found = stat(src, &st) == 0 && S_ISREG(st.st_mode);
      d += dl + (e ? 1 : 0);
    }
  }
  if (!found) return NULL;
  struct copy *c = NULL;
  for (size_t i = 0; i < ncopies; i++)
    if (strcmp(copies[i].file, file) == 0) c = &copies[i];
  if (c && c->dev == st.st_dev && c->ino == st.st_ino && c->size == st.st_size &&
      c->mtime.tv_sec == st.st_mtim.tv_sec && c->mtime.tv_nsec == st.st_mtim.tv_nsec)
    return c->path;
  if (c) {
    close(c->fd);
    free(c->path);
    c->path = NULL;
  }
  char tmp[4096];
  static unsigned serial;
  if (snprintf(tmp, sizeof tmp, "%s/.%s-%d-%u", dir, strrchr(src, '/') + 1, getpid(), ++serial) >= (int)sizeof tmp)
    return NULL;
  int in = open(src, O_RDONLY | O_CLOEXEC);
  if (in < 0) return NULL;
  /* EXCL and NOFOLLOW: never onto anything already there, a symlink included */
  int w = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0500);
  if (w < 0) return close(in), NULL;
  off_t left = st.st_size;
  int ok = 1;
  while (ok && left > 0) {
    ssize_t n = sendfile(w, in, NULL, (size_t)left);
    if (n <= 0)
      ok = 0;
    else
      left -= n;
  }
  close(in);
  ok = close(w) == 0 && ok;
  int fd = ok ? open(tmp, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) : -1;
  unlink(tmp);
  struct stat cs;
  if (fd < 0 || fstat(fd, &cs) != 0 || cs.st_nlink != 0) {
    if (fd >= 0) close(fd);
    return NULL;
  }
  if (!c) {
    copies = xrealloc(copies, (ncopies + 1) * sizeof *copies);
    c = &copies[ncopies++];
    c->file = strdup(file);
  }
  c->fd = fd, c->dev = st.st_dev, c->ino = st.st_ino, c->size = st.st_size, c->mtime = st.st_mtim;
  char p[64];
  snprintf(p, sizeof p, "/proc/%d/fd/%d", getpid(), fd);
  c->path = strdup(p);
  return c->path;
}

/* In the child, after fork: nothing of the helper's signal state survives into the command. */
static void reset_signals(void) {
  struct sigaction sa = {.sa_handler = SIG_DFL};
  for (int s = 1; s < NSIG; s++) sigaction(s, &sa, NULL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
}
static void child_fail(int ep) {
  int e = errno;
  (void)!write(ep, &e, sizeof e);
  _exit(127);
}

/*
 * Fork and exec. The child reports a failure before or at exec through `ep` (close-on-exec: the
 * read sees end of file when exec succeeded). Returns the pid, or -errno.
 */
static pid_t start_process(struct start *s, struct proc *p, const char *program) {
  int ep[2], fds[3][2] = {{-1, -1}, {-1, -1}, {-1, -1}}, master = -1;
  if (pipe2(ep, O_CLOEXEC) < 0) return -errno;
  pid_t pid;
  int err = 0;
  if (s->pty) {
    struct winsize ws = {.ws_row = s->rows, .ws_col = s->cols};
    /* the kernel's default terminal, UTF-8 aware (as node-pty set it up) */
    struct termios tio;
    memset(&tio, 0, sizeof tio);
    tio.c_iflag = ICRNL | IXON | IXANY | IMAXBEL | BRKINT | IUTF8;
    tio.c_oflag = OPOST | ONLCR;
    tio.c_cflag = CREAD | CS8 | HUPCL;
    tio.c_lflag = ICANON | ISIG | IEXTEN | ECHO | ECHOE | ECHOK | ECHOKE | ECHOCTL;
    tio.c_cc[VEOF] = 4, tio.c_cc[VEOL] = 0, tio.c_cc[VEOL2] = 0, tio.c_cc[VERASE] = 0x7f, tio.c_cc[VWERASE] = 23;
    tio.c_cc[VKILL] = 21, tio.c_cc[VREPRINT] = 18, tio.c_cc[VINTR] = 3, tio.c_cc[VQUIT] = 0x1c, tio.c_cc[VSUSP] = 26;
    tio.c_cc[VSTART] = 17, tio.c_cc[VSTOP] = 19, tio.c_cc[VLNEXT] = 22, tio.c_cc[VDISCARD] = 15, tio.c_cc[VMIN] = 1;
    tio.c_cc[VTIME] = 0;
    cfsetispeed(&tio, B38400);
    cfsetospeed(&tio, B38400);
    pid = forkpty(&master, NULL, &tio, &ws);
  } else {
    for (int i = 0; i < 3 && !err; i++) {
      if (s->stdio_kind[i] == 0) {
        if (pipe2(fds[i], O_CLOEXEC) < 0) err = errno;
      } else if (s->stdio_kind[i] == 3) {
        /* A bulk stream (rsync's) straight to the socket svcd listens on: no relay through this helper. Streams
           naming one socket share one connection. */
        int same = -1;
        for (int j = 0; j < i; j++)
          if (s->stdio_kind[j] == 3 && strcmp(s->stdio_path[j], s->stdio_path[i]) == 0) same = j;
        int fd = same >= 0 ? fcntl(fds[same][0], F_DUPFD_CLOEXEC, 0) : connect_unix(s->stdio_path[i]);
        if (fd < 0) err = errno;
        fds[i][0] = fds[i][1] = fd;
      } else {
        int fd = s->stdio_kind[i] == 1 ? open("/dev/null", O_RDWR | O_CLOEXEC)
                                       /* an existing file (svcd created it), never through a symlink */
                                       : open(s->stdio_path[i], O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) err = errno;
        fds[i][0] = fds[i][1] = fd;
      }
    }
    pid = err ? -1 : fork();
  }
  if (pid == 0) {
    close(ep[0]);
    reset_signals();
    if (!s->pty) {
      /* the child's end of each stream: the read end for stdin, the write end for stdout and stderr */
      for (int i = 0; i < 3; i++)
        if (dup2(fds[i][i == 0 ? 0 : 1], i) < 0) child_fail(ep[1]);
    }
    if (s->have_gid && (setgroups(0, NULL) < 0 || setgid(s->gid) < 0)) child_fail(ep[1]);
    if (s->have_uid && setuid(s->uid) < 0) child_fail(ep[1]);
    if (s->cwd && chdir(s->cwd) < 0) child_fail(ep[1]);
    environ = s->envp;
    execvp(program ? program : s->file, s->argv);
    child_fail(ep[1]);
  }
  if (pid < 0 && !err) err = errno;
  close(ep[1]);
  if (!err) {
    int e;
    ssize_t n;
    while ((n = read(ep[0], &e, sizeof e)) < 0 && errno == EINTR) {
    }
    if (n == (ssize_t)sizeof e) {
      err = e;
      while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
      }
    }
  }
  close(ep[0]);
  if (s->pty) {
    if (err) {
      if (master >= 0) close(master);
      return -err;
    }
    fcntl(master, F_SETFD, FD_CLOEXEC);
    fcntl(master, F_SETFL, fcntl(master, F_GETFL) | O_NONBLOCK);
    p->fd[0] = p->fd[1] = master;
    return pid;
  }
  for (int i = 0; i < 3; i++) {
    int parent_end = s->stdio_kind[i] == 0 ? fds[i][i == 0 ? 1 : 0] : -1;
    int child_end = s->stdio_kind[i] == 0 ? fds[i][i == 0 ? 0 : 1] : fds[i][0];
    if (child_end >= 0) close(child_end);
    if (parent_end < 0) continue;
    if (err) {
      close(parent_end);
      continue;
    }
    fcntl(parent_end, F_SETFL, fcntl(parent_end, F_GETFL) | O_NONBLOCK);
    p->fd[i] = parent_end;
  }
  return err ? -err : pid;
}

static int decode_start(struct reader *r, struct start *s, int run) {
  memset(s, 0, sizeof *s);
  if (run) {
    uint32_t timeout = r_u32(r);
    uint8_t f = r_u8(r);
    s->has_input = f & 1, s->extend_env = !!(f & 2), s->have_uid = !!(f & 4), s->have_gid = !!(f & 8);
    s->uid = r_u32(r), s->gid = r_u32(r);
    s->file = r_str(r, &s->bad);
    s->argv = r_strs(r, &s->bad);
    s->envp = r_strs(r, &s->bad);
    if (s->has_input) {
      uint32_t n = r_u32(r);
      if (r->n < n)
        r->bad = 1;
      else
        s->input = r->p, s->input_len = n;
    }
    s->stdio_kind[0] = s->has_input ? 0 : 1;
    return (int)timeout;
  }
  uint8_t f = r_u8(r);
  s->pty = f & 1;
  s->cols = r_u16(r), s->rows = r_u16(r);
  s->file = r_str(r, &s->bad);
  s->argv = r_strs(r, &s->bad);
  s->envp = r_strs(r, &s->bad);
  s->have_env = !!(f & 8);
  char *cwd = r_str(r, &s->bad), *copy_in = r_str(r, &s->bad);
  if (f & 2)
    s->cwd = cwd;
  else
    free(cwd);
  if (f & 4)
    s->copy_in = copy_in;
  else
    free(copy_in);
  for (int i = 0; i < 3; i++) {
    s->stdio_kind[i] = r_u8(r);
    s->stdio_path[i] = r_str(r, &s->bad);
    if (s->stdio_kind[i] > 3) s->bad = 1;
  }
  return 0;
}

/* argv as execvp wants it: the file first. */
static void with_file_first(struct start *s) {
  size_t n = 0;
  while (s->argv[n]) n++;
  char **v = xrealloc(NULL, (n + 2) * sizeof *v);
  v[0] = strdup(s->file);
  memcpy(v + 1, s->argv, (n + 1) * sizeof *v);
  free(s->argv);
  s->argv = v;
}

static void on_run(uint32_t id, struct reader *r) {
  struct start s;
  int timeout = decode_start(r, &s, 1);
  struct proc *p = add_proc(id, K_RUN);
  if (r->bad) {
    free_start(&s);
    send_status(F_RESULT, id, R_SPAWN_FAILED, 0, EPROTO, NULL, NULL);
    p->done = 1;
    return;
  }
  with_file_first(&s);
  char **user_env = s.envp;
  s.envp = merged_env(user_env, s.extend_env, 0);
  s.stdio_kind[1] = s.stdio_kind[2] = 0;
  pid_t pid = s.bad ? -EINVAL : start_process(&s, p, NULL);
  free(s.envp); /* the strings are user_env's or environ's */
  s.envp = user_env;
  if (pid < 0) {
    send_status(F_RESULT, id, R_SPAWN_FAILED, 0, -pid, NULL, NULL);
    p->done = 1;
  } else {
    p->pid = pid;
    if (timeout > 0) p->t_timeout = now_ms() + timeout;
    if (s.has_input) {
      buf_add(&p->inq, s.input, s.input_len);
      p->stdin_end = 1;
      write_stdin(p);
    }
  }
  free_start(&s);
}

static void on_spawn(uint32_t id, struct reader *r) {
  struct start s;
  decode_start(r, &s, 0);
  if (r->bad || s.bad) {
    free_start(&s);
    return send_u32(F_SPAWN_ERROR, id, r->bad ? EPROTO : EINVAL);
  }
  struct proc *p = add_proc(id, s.pty ? K_PTY : K_PIPES);
  with_file_first(&s);
  const char *program = s.copy_in ? private_copy(s.file, s.copy_in) : NULL;
  char **user_env = s.envp;
  s.envp = merged_env(user_env, !s.have_env, s.pty);
  pid_t pid = start_process(&s, p, program);
  free(s.envp);
  s.envp = user_env;
  free_start(&s);
  if (pid < 0) {
    p->done = 1;
    return send_u32(F_SPAWN_ERROR, id, (uint32_t)-pid);
  }
  p->pid = pid;
  if (p->kind == K_PTY) p->t_tty = now_ms() + TTY_SETTLE_MS;
  send_u32(F_SPAWNED, id, (uint32_t)pid);
}

static void on_frame(uint8_t type, uint32_t id, const uint8_t *body, size_t n) {
  struct reader r = {body, n, 0};
  if (type == F_RUN) return on_run(id, &r);
  if (type == F_SPAWN) return on_spawn(id, &r);
  struct proc *p = find(id);
  if (!p) {
    /* a process already ended: its stdin bytes are acknowledged all the same */
    if (type == F_STDIN && n >= 4) send_u32(F_STDIN_ACK, id, get32(body));
    return;
  }
  switch (type) {
  case F_CANCEL:
    if (p->kind == K_RUN && !p->reaped && !p->canceled) {
      p->canceled = 1;
      signal_proc(p, SIGTERM);
      if (!p->t_kill) p->t_kill = now_ms() + KILL_GRACE_MS;
    }
    return;
  case F_STDIN: {
    uint32_t seq = r_u32(&r);
    if (r.bad) return;
    if (p->fd[0] < 0 || p->stdin_end) return send_u32(F_STDIN_ACK, id, seq);
    buf_add(&p->inq, r.p, r.n);
    p->in_queued += r.n;
    if (p->nacks == p->capacks) {
      p->capacks = p->capacks ? p->capacks * 2 : 8;
      p->acks = xrealloc(p->acks, p->capacks * sizeof *p->acks);
    }
    p->acks[p->nacks++] = (struct ack){seq, p->in_queued};
    return write_stdin(p);
  }
  case F_STDIN_END:
    p->stdin_end = 1;
    return write_stdin(p);
  case F_PAUSE:
  case F_RESUME: {
    uint8_t fd = r_u8(&r);
    if (!r.bad && (fd == 1 || fd == 2)) p->paused[fd] = type == F_PAUSE;
    return;
  }
  case F_KILL: {
    uint32_t sig = r_u32(&r);
    if (!r.bad && sig > 0 && sig < NSIG) signal_proc(p, (int)sig);
    return;
  }
  case F_RESIZE: {
    struct winsize ws = {.ws_col = r_u16(&r)};
    ws.ws_row = r_u16(&r);
    if (!r.bad && p->kind == K_PTY && p->fd[1] >= 0) ioctl(p->fd[1], TIOCSWINSZ, &ws);
    return;
  }
  }
}

/* ---- the loop ------------------------------------------------------------------------------- */

static struct buf in;
static int ctl_open = 1;

static void read_ctl(void) {
  uint8_t b[CHUNK];
  for (;;) {
    ssize_t n = read(CTL, b, sizeof b);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    if (n <= 0) {
      ctl_open = 0;
      break;
    }
    buf_add(&in, b, (size_t)n);
    if ((size_t)n < sizeof b) break;
  }
  while (buf_pending(&in) >= 9) {
    const uint8_t *f = in.p + in.off;
    uint32_t len = get32(f);
    if (len < 5) { /* not a frame: svcd and the helper disagree; stop */
      ctl_open = 0;
      break;
    }
    if (buf_pending(&in) < 4 + (size_t)len) break;
    on_frame(f[4], get32(f + 5), f + 9, len - 5);
    buf_consume(&in, 4 + (size_t)len);
  }
}
static void flush_out(void) {
  while (buf_pending(&out)) {
    ssize_t n = write(CTL, out.p + out.off, buf_pending(&out));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n < 0) { /* svcd is gone */
      ctl_open = 0;
      buf_free(&out);
      return;
    }
    buf_consume(&out, (size_t)n);
  }
}

static void start_quit(void) {
  if (quitting) return;
  quitting = 1;
  quit_at = now_ms() + QUIT_GRACE_MS;
  for (size_t i = 0; i < nprocs; i++) signal_proc(procs[i], procs[i]->kind == K_PTY ? SIGHUP : SIGTERM);
}

static void reap(void) {
  int status;
  pid_t pid;
  while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
    for (size_t i = 0; i < nprocs; i++) {
      struct proc *p = procs[i];
      if (p->pid != pid || p->reaped || p->done) continue;
      p->reaped = 1;
      p->status = status;
      /* what it wrote before it exited goes out before its exit */
      for (int k = 1; k < 3; k++)
        if (p->fd[k] >= 0 && !(p->kind != K_RUN && p->paused[k])) read_output(p, k);
      p->t_grace = now_ms() + PIPE_GRACE_MS;
      break;
    }
  }
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGCHLD);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  sigprocmask(SIG_BLOCK, &mask, NULL);
  int sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  struct stat st;
  if (sfd < 0 || fstat(CTL, &st) != 0) {
    fputs("svcd-spawn: fd 3 must be svcd's socket\n", stderr);
    return 2;
  }
  /* nothing svcd's process left open without close-on-exec reaches a command */
  close_range(CTL + 1, ~0U, CLOSE_RANGE_CLOEXEC);
  fcntl(CTL, F_SETFD, FD_CLOEXEC);
  fcntl(CTL, F_SETFL, fcntl(CTL, F_GETFL) | O_NONBLOCK);

  struct pollfd *pfd = NULL;
  struct ref {
    struct proc *p;
    int i;
  } *refs = NULL;
  size_t cap = 0;
  for (;;) {
    if (!ctl_open) start_quit();
    if (quitting && (nprocs == 0 || now_ms() >= quit_at)) {
      if (ctl_open) flush_out();
      return 0;
    }
    size_t need = 2 + nprocs * 3, k = 0;
    if (need > cap) {
      cap = need * 2;
      pfd = xrealloc(pfd, cap * sizeof *pfd);
      refs = xrealloc(refs, cap * sizeof *refs);
    }
    pfd[k] = (struct pollfd){.fd = ctl_open ? CTL : -1, .events = (short)(POLLIN | (buf_pending(&out) ? POLLOUT : 0))};
    refs[k++] = (struct ref){NULL, 0};
    pfd[k] = (struct pollfd){.fd = sfd, .events = POLLIN};
    refs[k++] = (struct ref){NULL, 1};
    int64_t t = now_ms(), wake = quitting ? quit_at : INT64_MAX;
    /* output waiting for svcd: read no more until it has taken some */
    int hold = buf_pending(&out) > 16 * CHUNK;
    for (size_t i = 0; i < nprocs; i++) {
      struct proc *p = procs[i];
      if (p->done) continue;
      if (p->kind == K_PTY) {
        /* held input: look at the terminal's mode again in TTY_LOOK_MS */
        int waiting = buf_pending(&p->inq) && p->t_tty;
        if (waiting && t + TTY_LOOK_MS < wake) wake = t + TTY_LOOK_MS;
        if (p->fd[1] >= 0) {
          short ev = (short)((!p->paused[1] && !hold ? POLLIN : 0) | (buf_pending(&p->inq) && !waiting ? POLLOUT : 0));
          pfd[k] = (struct pollfd){.fd = ev ? p->fd[1] : -1, .events = ev};
          refs[k++] = (struct ref){p, 1};
        }
      } else {
        for (int j = 1; j < 3; j++)
          if (p->fd[j] >= 0) {
            int off = p->kind != K_RUN && (p->paused[j] || hold);
            pfd[k] = (struct pollfd){.fd = off ? -1 : p->fd[j], .events = POLLIN};
            refs[k++] = (struct ref){p, j};
          }
        if (p->fd[0] >= 0 && buf_pending(&p->inq)) {
          pfd[k] = (struct pollfd){.fd = p->fd[0], .events = POLLOUT};
          refs[k++] = (struct ref){p, 0};
        }
      }
      if (p->t_timeout && p->t_timeout < wake) wake = p->t_timeout;
      if (p->t_kill && p->t_kill < wake) wake = p->t_kill;
      if (p->t_grace && p->t_grace < wake) wake = p->t_grace;
    }
    int timeout = wake == INT64_MAX ? -1 : wake <= t ? 0 : (int)(wake - t);
    int n = poll(pfd, k, timeout);
    if (n < 0 && errno != EINTR) return 1;
    for (size_t i = 0; n > 0 && i < k; i++) {
      if (!pfd[i].revents || pfd[i].fd < 0) continue;
      struct ref r = refs[i];
      if (!r.p) {
        if (r.i == 0) {
          if (pfd[i].revents & POLLOUT) flush_out();
          if (pfd[i].revents & (POLLIN | POLLHUP | POLLERR)) read_ctl();
        } else {
          struct signalfd_siginfo si;
          int chld = 0;
          while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
            if (si.ssi_signo == SIGCHLD)
              chld = 1;
            else
              start_quit();
          }
          if (chld) reap();
        }
        continue;
      }
      if (r.p->done) continue;
      if (r.i == 0 || (r.p->kind == K_PTY && (pfd[i].revents & POLLOUT))) write_stdin(r.p);
      if (r.i != 0 && (pfd[i].revents & (POLLIN | POLLHUP | POLLERR)) && r.p->fd[r.i] >= 0) read_output(r.p, r.i);
    }
    /* timers, and the ends of processes */
    t = now_ms();
    for (size_t i = 0; i < nprocs; i++) {
      struct proc *p = procs[i];
      if (p->done) continue;
      if (p->t_timeout && t >= p->t_timeout) {
        p->t_timeout = 0;
        if (!p->reaped) {
          p->timed_out = 1;
          signal_proc(p, SIGTERM);
          p->t_kill = t + KILL_GRACE_MS;
        }
      }
      if (p->t_kill && t >= p->t_kill) {
        p->t_kill = 0;
        signal_proc(p, SIGKILL);
      }
      if (p->kind == K_PTY && p->t_tty && buf_pending(&p->inq)) write_stdin(p);
      if (!p->reaped) continue;
      /* its output pipes end with it, or within PIPE_GRACE_MS (what it left behind may hold them); a
         stream whose reader paused keeps what is left for it */
      int open = p->fd[1] >= 0 || p->fd[2] >= 0;
      int held = p->kind != K_RUN && ((p->fd[1] >= 0 && p->paused[1]) || (p->fd[2] >= 0 && p->paused[2]));
      if (!open || (!held && t >= p->t_grace))
        finish(p);
      else if (t >= p->t_grace)
        p->t_grace = t + PIPE_GRACE_MS; /* held: look again later */
    }
    free_done();
    if (ctl_open) flush_out();
  }
}
