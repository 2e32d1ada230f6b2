// The spawn attributes every child of posix_spawn.c and spawn_server.main.c gets: it leads a new
// session, every signal is at its default action and none is blocked.
#ifndef DSH_CHILD_ATTR_H
#define DSH_CHILD_ATTR_H
#include <signal.h>
#include <spawn.h>
#include <string.h>

// Returns 0 or an errno (posix_spawnattr_* style).
static int child_attr(posix_spawnattr_t *attr) {
  sigset_t all, none;
  sigfillset(&all);
  // glibc's sigfillset leaves out its internal signals (32 up to SIGRTMIN), and its posix_spawn
  // then starts the child with those ignored, which exec keeps. Setting their bits directly makes
  // the child's dispositions all default, as with libuv's fork path.
  for (int sig = 32; sig < SIGRTMIN; sig++) {
    unsigned long *words = (unsigned long *)&all;
    size_t width = 8 * sizeof(unsigned long);
    words[(sig - 1) / width] |= 1UL << ((sig - 1) % width);
  }
  sigemptyset(&none);
  // Node ignores SIGPIPE (and the server ignores it too); the child must not inherit that.
  int rc = posix_spawnattr_setflags(attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  if (!rc) rc = posix_spawnattr_setsigdefault(attr, &all);
  if (!rc) rc = posix_spawnattr_setsigmask(attr, &none);
  return rc;
}
#endif
