// spawn-server: starts commands on request, from inside whatever confinement it was started in.
//
// @dsh/sandbox-local starts one per sandbox policy as `bwrap <policy flags> -- spawn-server`, so a
// confined command costs a fork of this small process plus the command's exec instead of a whole
// bwrap start (namespaces, mounts, an init) per command. The harness talks to it over fd 3, a
// Unix stream socket (see src/server.ts for the other side):
//
// request:  u32 body length, u32 kind, then the body. Host byte order (same machine).
//   'S' spawn: u32 id, u32 argc, u32 envc, then NUL-terminated strings: cwd, file, argv[argc],
//       env[envc]. A file without a slash is looked up on the PATH of env. Exactly three descriptors ride along (SCM_RIGHTS): the command's 0, 1 and 2.
//   'K' kill:  u32 id, u32 signal. Signals the command's process group.
// replies (text lines):
//   "R"                     ready (sent once at start: whatever ran in front of it is set up)
//   "S <id> <pid>"          started (pid in this process's PID namespace)
//   "X <id> <errno>"        not started (posix_spawn's error, or EPROTO for a malformed request)
//   "E <id> <code> <sig>"   the command exited (code -1 when a signal ended it, sig 0 otherwise)
//
// Each command leads a new session (so its process group is its own), starts with every signal
// at its default action and none blocked, and closes nothing else in but its three descriptors.
// When a command exits, what is left of its process group is killed. With `--sweep` (only in a
// PID namespace of its own), once no command is running any more, every other process the server
// can signal is killed too: what a command started in the background, even in a session of its
// own, ends with it, as it did when each command had a sandbox of its own.
// On end of input (the harness closed the socket or died) every command is killed and the server
// exits.
//
// Built by scripts/build.mjs (`native/*.main.c` become executables in native/build/).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child_attr.h"

#define CONTROL 3
#define MAX_BODY (16u << 20)
#define MAX_JOBS 4096

struct job {
  uint32_t id;
  pid_t pid;
};

static struct job jobs[MAX_JOBS];
static int job_count = 0;
// `--sweep`: this server has a PID namespace to itself (PID 1 is the sandbox's init, the server
// PID 2), so kill(-1) reaches only what its commands left behind. Never without: on the host,
// kill(-1) would reach every process of the user.
static int sweep = 0;

static void reply(const char *format, ...) {
  char line[96];
  va_list ap;
  va_start(ap, format);
  int n = vsnprintf(line, sizeof line, format, ap);
  va_end(ap);
  for (int done = 0; done < n;) {
    ssize_t w = write(CONTROL, line + done, (size_t)(n - done));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return; // the harness is gone; the next read sees the end
    done += (int)w;
  }
}

static int read_full(void *buf, size_t len) {
  size_t done = 0;
  while (done < len) {
    ssize_t r = read(CONTROL, (char *)buf + done, len - done);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    done += (size_t)r;
  }
  return 0;
}

static void kill_group(pid_t pid, int sig) {
  if (kill(-pid, sig) != 0 && errno == ESRCH) kill(pid, sig);
}

static void kill_everything(void) {
  for (int i = 0; i < job_count; i++) kill_group(jobs[i].pid, SIGKILL);
  // Everything else this server may signal (kill(-1) spares PID 1 and the caller itself).
  if (sweep) kill(-1, SIGKILL);
}

// The next NUL-terminated string of the body, or NULL past its end.
static char *next_string(char **cursor, char *end) {
  char *start = *cursor;
  if (start >= end) return NULL;
  char *nul = memchr(start, '\0', (size_t)(end - start));
  if (!nul) return NULL;
  *cursor = nul + 1;
  return start;
}

// A bare command name is looked up on the command's own PATH (from its environment), as a shell
// would, inside this server's view of the filesystem. Returns 0 with `out` filled, or an errno.
static int search_path(const char *file, char **envp, char *out, size_t size) {
  const char *path = "/usr/local/bin:/usr/bin:/bin";
  for (char **e = envp; *e; e++) {
    if (strncmp(*e, "PATH=", 5) == 0) {
      path = *e + 5;
      break;
    }
  }
  int found_denied = 0;
  for (const char *dir = path;;) {
    const char *colon = strchr(dir, ':');
    size_t dlen = colon ? (size_t)(colon - dir) : strlen(dir);
    // An empty entry means the working directory, as for execvp.
    int n = dlen == 0 ? snprintf(out, size, "%s", file) : snprintf(out, size, "%.*s/%s", (int)dlen, dir, file);
    if (n > 0 && (size_t)n < size) {
      struct stat st;
      if (stat(out, &st) == 0 && S_ISREG(st.st_mode)) {
        if (access(out, X_OK) == 0) return 0;
        found_denied = 1;
      }
    }
    if (!colon) break;
    dir = colon + 1;
  }
  return found_denied ? EACCES : ENOENT;
}

static void spawn_job(char *body, uint32_t len, int fds[3]) {
  uint32_t head[3];
  if (len < sizeof head) {
    reply("X 0 %d\n", EPROTO);
    return;
  }
  memcpy(head, body, sizeof head);
  uint32_t id = head[0], argc = head[1], envc = head[2];
  char *cursor = body + sizeof head, *end = body + len;
  if (fds[0] < 0 || fds[1] < 0 || fds[2] < 0 || argc == 0 || argc > len || envc > len || job_count >= MAX_JOBS) {
    reply("X %u %d\n", id, job_count >= MAX_JOBS ? EAGAIN : EPROTO);
    return;
  }
  char **argv = calloc((size_t)argc + 1, sizeof(char *));
  char **envp = calloc((size_t)envc + 1, sizeof(char *));
  char *cwd = next_string(&cursor, end);
  char *file = next_string(&cursor, end);
  int ok = argv && envp && cwd && file;
  for (uint32_t i = 0; ok && i < argc; i++) ok = (argv[i] = next_string(&cursor, end)) != NULL;
  for (uint32_t i = 0; ok && i < envc; i++) ok = (envp[i] = next_string(&cursor, end)) != NULL;
  if (!ok) {
    reply("X %u %d\n", id, EPROTO);
    free(argv);
    free(envp);
    return;
  }

  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attr);
  int rc = 0;
  char located[4096];
  if (!strchr(file, '/')) {
    // The lookup happens before the chdir of the command, so a relative PATH entry is relative to
    // the server's directory, not the command's: refuse those rather than guess.
    rc = search_path(file, envp, located, sizeof located);
    if (!rc && located[0] != '/') rc = ENOENT;
    if (!rc) file = located;
  }
  for (int i = 0; !rc && i < 3; i++) rc = posix_spawn_file_actions_adddup2(&actions, fds[i], i);
  if (!rc) rc = posix_spawn_file_actions_addchdir_np(&actions, cwd);
  if (!rc) rc = child_attr(&attr);
  pid_t pid = -1;
  if (!rc) rc = posix_spawn(&pid, file, &actions, &attr, argv, envp);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  free(argv);
  free(envp);
  if (rc) {
    reply("X %u %d\n", id, rc);
    return;
  }
  jobs[job_count].id = id;
  jobs[job_count].pid = pid;
  job_count++;
  reply("S %u %d\n", id, (int)pid);
}

static void kill_job(char *body, uint32_t len) {
  uint32_t v[2];
  if (len < sizeof v) return;
  memcpy(v, body, sizeof v);
  for (int i = 0; i < job_count; i++) {
    if (jobs[i].id == v[0]) kill_group(jobs[i].pid, (int)v[1]);
  }
}

// One request. Returns -1 at the end of input.
static int handle_request(void) {
  uint32_t header[2];
  int fds[3] = {-1, -1, -1};
  union {
    char buf[CMSG_SPACE(sizeof(int) * 3)];
    struct cmsghdr align;
  } control;
  struct iovec iov = {header, sizeof header};
  struct msghdr msg = {0};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control.buf;
  msg.msg_controllen = sizeof control.buf;
  ssize_t n;
  do n = recvmsg(CONTROL, &msg, MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  if (n <= 0) return -1;
  int received = 0;
  for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    int count = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
    int *in = (int *)CMSG_DATA(c);
    for (int i = 0; i < count; i++) {
      if (received < 3) fds[received++] = in[i];
      else close(in[i]);
    }
  }
  int status = 0;
  if ((size_t)n < sizeof header && read_full((char *)header + n, sizeof header - (size_t)n) != 0) status = -1;
  char *body = NULL;
  if (status == 0 && header[0] > MAX_BODY) status = -1; // a broken stream: nothing after it can be trusted
  if (status == 0 && header[0] > 0) {
    body = malloc(header[0]);
    if (!body || read_full(body, header[0]) != 0) status = -1;
  }
  if (status == 0) {
    if (header[1] == 'S') spawn_job(body, header[0], fds);
    else if (header[1] == 'K') kill_job(body, header[0]);
  }
  for (int i = 0; i < 3; i++) {
    if (fds[i] >= 0) close(fds[i]);
  }
  free(body);
  return status;
}

static void reap(void) {
  for (;;) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return;
    for (int i = 0; i < job_count; i++) {
      if (jobs[i].pid != pid) continue;
      uint32_t id = jobs[i].id;
      jobs[i] = jobs[--job_count];
      kill_group(pid, SIGKILL);
      if (job_count == 0 && sweep) kill(-1, SIGKILL);
      if (WIFSIGNALED(status)) reply("E %u -1 %d\n", id, WTERMSIG(status));
      else reply("E %u %d 0\n", id, WEXITSTATUS(status));
      break;
    }
  }
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--sweep") == 0) {
    if (getpid() > 2) {
      fprintf(stderr, "spawn-server: --sweep needs a PID namespace of its own (pid %d)\n", (int)getpid());
      return 2;
    }
    sweep = 1;
  }
  if (fcntl(CONTROL, F_SETFD, FD_CLOEXEC) != 0) {
    fprintf(stderr, "spawn-server: no control socket on fd 3\n");
    return 2;
  }
  // Nothing the server inherited beyond 0-3 reaches a command.
#ifdef SYS_close_range
  syscall(SYS_close_range, 4u, ~0u, 4u /* CLOSE_RANGE_CLOEXEC */);
#endif
  signal(SIGPIPE, SIG_IGN);
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, NULL);
  int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) {
    perror("spawn-server: signalfd");
    return 2;
  }
  reply("R\n");
  for (;;) {
    struct pollfd p[2] = {{CONTROL, POLLIN, 0}, {sfd, POLLIN, 0}};
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (p[1].revents) {
      struct signalfd_siginfo info;
      while (read(sfd, &info, sizeof info) > 0) {
      }
      reap();
    }
    if (p[0].revents && handle_request() != 0) break;
  }
  kill_everything();
  return 0;
}
