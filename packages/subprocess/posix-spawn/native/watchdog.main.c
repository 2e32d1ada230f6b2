// watchdog: ends what the harness started once the harness is gone, however it died.
//
// @dsh/subprocess-local starts one per harness process, lazily, on the first process it spawns
// (src/watchdog.ts is the other side). The harness holds the only write end of this program's
// stdin and tells it, one text line each, which process groups it runs:
//
//   "+<id> <graceMs>\n"   guard <id>: a process group id that is also a session id (every child
//                         of the seam leads a new session, so its pid, pgid and sid are equal)
//   "-<id>\n"             forget <id> (its processes are gone)
//
// The end of stdin means the harness died (a SIGKILL, the OOM killer, a crash) or exited: the
// kernel closes its descriptors either way. Then every guarded id still alive gets SIGTERM,
// and SIGKILL once its grace is over, as the harness itself would have done; the watchdog exits
// when nothing guarded is left. A process of the id is any process whose process group or session
// is <id>, so job-control groups of a terminal's session are reached too (Linux /proc; elsewhere
// the group only).
//
// Pid reuse: the kernel never hands out a pid while a process group or session of that number
// exists, so an id can only be reused after all of its processes ended, and the harness forgets
// an id once its processes are gone. For the instant in between, the start time of <id>'s leader
// is read when it is guarded: if a process numbered <id> runs at the end with another start
// time, it is someone else, and the id is skipped.
//
// The watchdog leads a session of its own (posix_spawn's SETSID), is in no guarded group, and
// signals nothing before its input ends. Built by scripts/build.mjs (native/*.main.c).
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_GRACE_MS 10000
#define POLL_MS 20

struct guarded {
  pid_t id;
  int grace_ms;
  unsigned long long start; // the leader's start time (clock ticks since boot), 0 if unknown
  int killed;  // SIGKILL was sent
  int done;    // nothing of it is left (or it is someone else's now)
  int pending; // the signal the next sweep sends, 0 for none
  int live;    // live processes the last sweep found
};

static struct guarded *list = NULL;
static size_t count = 0, capacity = 0;

// Fields of /proc/<pid>/stat after the command name: state, pgrp, session, start time.
struct stat_fields {
  char state;
  long pgrp, session;
  unsigned long long start;
};

static int read_stat(const char *pid, struct stat_fields *out) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%s/stat", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  // The command name is in parentheses and may itself contain spaces and parentheses.
  char *p = strrchr(buf, ')');
  if (!p || p[1] != ' ') return -1;
  p += 2;
  out->state = *p;
  // Fields from the state on: state(3) ppid(4) pgrp(5) session(6) ... starttime(22).
  char *save = NULL;
  int field = 3;
  out->pgrp = out->session = -1;
  out->start = 0;
  for (char *tok = strtok_r(p, " ", &save); tok; tok = strtok_r(NULL, " ", &save), field++) {
    if (field == 5) out->pgrp = strtol(tok, NULL, 10);
    else if (field == 6) out->session = strtol(tok, NULL, 10);
    else if (field == 22) {
      out->start = strtoull(tok, NULL, 10);
      break;
    }
  }
  return 0;
}

static unsigned long long start_of(pid_t pid) {
  char name[24];
  struct stat_fields f;
  snprintf(name, sizeof name, "%d", (int)pid);
  return read_stat(name, &f) == 0 ? f.start : 0;
}

// One pass over every process: each guarded id that is not done and has `pending` set gets that
// signal (its group, then each of its processes), and `live` counts the id's live processes.
// Zombies count as gone: they hold nothing, and their parent (or PID 1) reaps them.
static void sweep(void) {
  for (size_t i = 0; i < count; i++) {
    list[i].live = 0;
    if (!list[i].done && list[i].pending) kill(-list[i].id, list[i].pending);
  }
  DIR *dir = opendir("/proc");
  if (!dir) {
    // No /proc: the group is all that can be reached.
    for (size_t i = 0; i < count; i++) list[i].live = !list[i].done && kill(-list[i].id, 0) == 0;
  } else {
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
      if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
      struct stat_fields f;
      if (read_stat(e->d_name, &f) != 0 || f.state == 'Z' || f.state == 'X') continue;
      for (size_t i = 0; i < count; i++) {
        struct guarded *g = &list[i];
        if (g->done || (f.pgrp != g->id && f.session != g->id)) continue;
        g->live++;
        if (g->pending) kill((pid_t)strtol(e->d_name, NULL, 10), g->pending);
      }
    }
    closedir(dir);
  }
  for (size_t i = 0; i < count; i++) {
    list[i].pending = 0;
    if (list[i].live == 0) list[i].done = 1;
  }
}

static struct guarded *find(pid_t id) {
  for (size_t i = 0; i < count; i++)
    if (list[i].id == id) return &list[i];
  return NULL;
}

static void guard(pid_t id, int grace_ms) {
  if (id <= 1) return;
  if (grace_ms < 0) grace_ms = 0;
  if (grace_ms > MAX_GRACE_MS) grace_ms = MAX_GRACE_MS;
  struct guarded *g = find(id);
  if (!g) {
    if (count == capacity) {
      size_t next = capacity ? capacity * 2 : 64;
      struct guarded *grown = realloc(list, next * sizeof *list);
      if (!grown) return;
      list = grown;
      capacity = next;
    }
    g = &list[count++];
  }
  g->id = id;
  g->grace_ms = grace_ms;
  g->start = start_of(id);
  g->killed = 0;
  g->done = 0;
  g->pending = 0;
  g->live = 0;
}

static void forget(pid_t id) {
  for (size_t i = 0; i < count; i++) {
    if (list[i].id != id) continue;
    list[i] = list[--count];
    return;
  }
}

static void line(char *text) {
  char *end = NULL;
  if (text[0] == '+') {
    long id = strtol(text + 1, &end, 10);
    if (end == text + 1 || *end != ' ') return;
    long grace = strtol(end + 1, NULL, 10);
    guard((pid_t)id, (int)grace);
  } else if (text[0] == '-') {
    long id = strtol(text + 1, &end, 10);
    if (end != text + 1) forget((pid_t)id);
  }
}

static long long now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

// True when a process numbered `id` runs now but is not the leader that was guarded.
static int reused(const struct guarded *g) {
  unsigned long long now = start_of(g->id);
  return now != 0 && now != g->start;
}

static void end_everything(void) {
  long long began = now_ms();
  for (size_t i = 0; i < count; i++) {
    if (reused(&list[i])) list[i].done = 1;
    else list[i].pending = SIGTERM;
  }
  for (;;) {
    sweep();
    long long elapsed = now_ms() - began;
    int waiting = 0;
    for (size_t i = 0; i < count; i++) {
      struct guarded *g = &list[i];
      if (g->done) continue;
      waiting = 1;
      if (!g->killed && elapsed >= g->grace_ms) {
        g->pending = SIGKILL;
        g->killed = 1;
      }
    }
    // Killed processes go at once; a second past the longest grace, nothing more can be done.
    if (!waiting || elapsed > MAX_GRACE_MS + 1000) return;
    // A KILL just decided is sent without waiting for the next poll.
    int now = 0;
    for (size_t i = 0; i < count; i++) now |= list[i].pending != 0;
    if (now) continue;
    struct timespec pause = {0, POLL_MS * 1000000L};
    nanosleep(&pause, NULL);
  }
}

int main(void) {
  // Nothing but the input pipe matters; a write to a closed stderr must not end the watchdog.
  signal(SIGPIPE, SIG_IGN);
  char buf[4096];
  size_t used = 0;
  for (;;) {
    ssize_t n = read(0, buf + used, sizeof buf - used);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    used += (size_t)n;
    size_t from = 0;
    for (size_t i = 0; i < used; i++) {
      if (buf[i] != '\n') continue;
      buf[i] = '\0';
      line(buf + from);
      from = i + 1;
    }
    if (from == 0 && used == sizeof buf) used = 0; // an overlong line: dropped
    else {
      memmove(buf, buf + from, used - from);
      used -= from;
    }
  }
  end_everything();
  return 0;
}
