// posix_spawn.node: starts a pipe process with posix_spawn(3) instead of libuv's fork + exec.
//
// On Linux, glibc's posix_spawn is clone(CLONE_VM | CLONE_VFORK): the child shares the parent's
// memory until it execs, so no page table is copied and nothing is torn down at exec. libuv
// (Node 20 to 24) forks, which on virtual machines with costly page-table work takes several
// milliseconds per command from a Node-sized process (see .agents/notes/posix-spawn.md).
//
// Built by scripts/build.mjs with the system C compiler, no Node headers: the few Node-API
// functions used are declared below (Node-API is a stable C ABI). When it is missing or fails to
// load, its users (@dsh/subprocess-local, @dsh/sandbox-local) use child_process as before.
//
// spawn(file, argv, envp, cwd, stdinPipe, mergeStderr, searchPath) -> [pid, stdinFd, stdoutFd,
//   stderrFd] (stdinFd -1 when stdin is /dev/null, stderrFd -1 when stderr shares stdout's pipe),
//   or a negative errno. searchPath looks a bare file name up on this process's PATH
//   (posix_spawnp). The child leads a new session (setsid), every signal
//   is reset to its default action and none is blocked, as libuv does for its children.
//   An optional 8th argument, a descriptor, becomes the child's fd 3 (a spawn server's control
//   socket).
// socketPair() -> [fd, fd], a connected Unix stream pair (both close-on-exec), or a negative errno.
// closeFd(fd) -> 0 or a negative errno.
// request(fd, bytes, stdinPipe, mergeStderr) -> [stdinFd, stdoutFd, stderrFd] like spawn: makes
//   the pipes of a command a spawn server starts (native/spawn_server.main.c), sends `bytes` with
//   the command's three ends attached (SCM_RIGHTS) and closes those ends here.
// send(fd, bytes) -> 0 or a negative errno: `bytes` to the server, no descriptors.
// reap(pid) -> -1 while running, the exit code (0-255), 256 + signal number, or -2 when the pid is
//   not a child of this process (already reaped).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child_attr.h"

// --- Node-API (js_native_api.h / node_api.h), declared rather than included -----------------
typedef struct napi_env__ *napi_env;
typedef struct napi_value__ *napi_value;
typedef struct napi_callback_info__ *napi_callback_info;
typedef int napi_status; // napi_ok == 0
typedef napi_value (*napi_callback)(napi_env env, napi_callback_info info);

extern napi_status napi_get_cb_info(napi_env, napi_callback_info, size_t *, napi_value *, napi_value *, void **);
extern napi_status napi_get_value_string_utf8(napi_env, napi_value, char *, size_t, size_t *);
extern napi_status napi_get_value_int32(napi_env, napi_value, int32_t *);
extern napi_status napi_get_value_bool(napi_env, napi_value, bool *);
extern napi_status napi_get_array_length(napi_env, napi_value, uint32_t *);
extern napi_status napi_get_element(napi_env, napi_value, uint32_t, napi_value *);
extern napi_status napi_set_element(napi_env, napi_value, uint32_t, napi_value);
extern napi_status napi_create_int32(napi_env, int32_t, napi_value *);
extern napi_status napi_create_array_with_length(napi_env, size_t, napi_value *);
extern napi_status napi_create_function(napi_env, const char *, size_t, napi_callback, void *, napi_value *);
extern napi_status napi_set_named_property(napi_env, napi_value, const char *, napi_value);
extern napi_status napi_throw_type_error(napi_env, const char *, const char *);
extern napi_status napi_get_buffer_info(napi_env, napi_value, void **, size_t *);

static napi_value int_value(napi_env env, int32_t n) {
  napi_value v = NULL;
  napi_create_int32(env, n, &v);
  return v;
}

// A JS string as a malloc'd C string; NULL (with a TypeError thrown) when it is not a string.
static char *c_string(napi_env env, napi_value value) {
  size_t len = 0;
  if (napi_get_value_string_utf8(env, value, NULL, 0, &len) != 0) {
    napi_throw_type_error(env, NULL, "posix_spawn: expected a string");
    return NULL;
  }
  char *s = malloc(len + 1);
  if (!s) return NULL;
  napi_get_value_string_utf8(env, value, s, len + 1, &len);
  return s;
}

static void free_list(char **list) {
  if (!list) return;
  for (char **p = list; *p; p++) free(*p);
  free(list);
}

// A JS array of strings as a NULL-terminated char* array.
static char **c_list(napi_env env, napi_value array) {
  uint32_t n = 0;
  if (napi_get_array_length(env, array, &n) != 0) {
    napi_throw_type_error(env, NULL, "posix_spawn: expected an array of strings");
    return NULL;
  }
  char **list = calloc((size_t)n + 1, sizeof(char *));
  if (!list) return NULL;
  for (uint32_t i = 0; i < n; i++) {
    napi_value item;
    napi_get_element(env, array, i, &item);
    if (!(list[i] = c_string(env, item))) {
      free_list(list);
      return NULL;
    }
  }
  return list;
}

static void close_pair(int fds[2]) {
  if (fds[0] >= 0) close(fds[0]);
  if (fds[1] >= 0) close(fds[1]);
  fds[0] = fds[1] = -1;
}

static napi_value Spawn(napi_env env, napi_callback_info info) {
  size_t argc = 8;
  napi_value args[8];
  napi_get_cb_info(env, info, &argc, args, NULL, NULL);
  if (argc < 7) {
    napi_throw_type_error(env, NULL, "posix_spawn: spawn(file, argv, envp, cwd, stdinPipe, mergeStderr, searchPath)");
    return NULL;
  }
  bool stdin_pipe = false, merge_stderr = false, search_path = false;
  napi_get_value_bool(env, args[4], &stdin_pipe);
  napi_get_value_bool(env, args[5], &merge_stderr);
  napi_get_value_bool(env, args[6], &search_path);
  int32_t control_fd = -1;
  if (argc >= 8) napi_get_value_int32(env, args[7], &control_fd);
  char *file = c_string(env, args[0]);
  char **argv = file ? c_list(env, args[1]) : NULL;
  char **envp = argv ? c_list(env, args[2]) : NULL;
  char *cwd = envp ? c_string(env, args[3]) : NULL;
  napi_value result = NULL;
  if (!cwd) goto done_strings;

  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
  int rc = 0;
  // The parent's ends stay close-on-exec (no other child inherits them); dup2 onto 0-2 clears
  // the flag for this child's copies only.
  if ((stdin_pipe && pipe2(in, O_CLOEXEC) != 0) || pipe2(out, O_CLOEXEC) != 0 || (!merge_stderr && pipe2(err, O_CLOEXEC) != 0)) {
    rc = errno;
    goto done_pipes;
  }

  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attr);
  if (stdin_pipe) rc = posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  else rc = posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  if (!rc) rc = posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  if (!rc) rc = posix_spawn_file_actions_adddup2(&actions, merge_stderr ? out[1] : err[1], 2);
  if (!rc && control_fd >= 0) rc = posix_spawn_file_actions_adddup2(&actions, control_fd, 3);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 29))
  if (!rc) rc = posix_spawn_file_actions_addchdir_np(&actions, cwd);
#else
  if (!rc) rc = ENOSYS;
#endif
  if (!rc) rc = child_attr(&attr);
  pid_t pid = -1;
  if (!rc) rc = (search_path ? posix_spawnp : posix_spawn)(&pid, file, &actions, &attr, argv, envp);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc) goto done_pipes;

  // The child's ends belong to the child now.
  if (stdin_pipe) close(in[0]);
  close(out[1]);
  if (!merge_stderr) close(err[1]);
  napi_create_array_with_length(env, 4, &result);
  napi_set_element(env, result, 0, int_value(env, pid));
  napi_set_element(env, result, 1, int_value(env, stdin_pipe ? in[1] : -1));
  napi_set_element(env, result, 2, int_value(env, out[0]));
  napi_set_element(env, result, 3, int_value(env, merge_stderr ? -1 : err[0]));
  goto done_strings;

done_pipes:
  close_pair(in);
  close_pair(out);
  close_pair(err);
  result = int_value(env, -rc);
done_strings:
  free(file);
  free_list(argv);
  free_list(envp);
  free(cwd);
  return result;
}

static napi_value Reap(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value args[1];
  int32_t pid = 0;
  napi_get_cb_info(env, info, &argc, args, NULL, NULL);
  if (argc < 1 || napi_get_value_int32(env, args[0], &pid) != 0 || pid <= 0) {
    napi_throw_type_error(env, NULL, "posix_spawn: reap(pid) needs a positive pid");
    return NULL;
  }
  int status = 0;
  pid_t r;
  do r = waitpid(pid, &status, WNOHANG);
  while (r < 0 && errno == EINTR);
  if (r == 0) return int_value(env, -1);
  if (r < 0) return int_value(env, -2);
  if (WIFEXITED(status)) return int_value(env, WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return int_value(env, 256 + WTERMSIG(status));
  return int_value(env, -1);
}

static napi_value SocketPair(napi_env env, napi_callback_info info) {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) return int_value(env, -errno);
  napi_value result;
  napi_create_array_with_length(env, 2, &result);
  napi_set_element(env, result, 0, int_value(env, fds[0]));
  napi_set_element(env, result, 1, int_value(env, fds[1]));
  return result;
}

static napi_value CloseFd(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value args[1];
  int32_t fd = -1;
  napi_get_cb_info(env, info, &argc, args, NULL, NULL);
  if (argc < 1 || napi_get_value_int32(env, args[0], &fd) != 0 || fd < 0) {
    napi_throw_type_error(env, NULL, "posix_spawn: closeFd(fd) needs a descriptor");
    return NULL;
  }
  return int_value(env, close(fd) == 0 ? 0 : -errno);
}

// Writes all of buf to a (possibly non-blocking) socket, the descriptors riding on the first
// byte. Waits for room up to 100 ms in all (this blocks the harness's event loop): a live server
// reads a request as soon as it arrives, so a full socket means a stopped or stuck server, which
// the caller then gives up on (ETIMEDOUT).
static int send_all(int fd, const char *buf, size_t len, const int *fds, int nfds) {
  size_t done = 0;
  int waited = 0;
  while (done < len) {
    union {
      char buf[CMSG_SPACE(sizeof(int) * 3)];
      struct cmsghdr align;
    } control;
    struct iovec iov = {(void *)(buf + done), len - done};
    struct msghdr msg = {0};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (done == 0 && nfds > 0) {
      memset(&control, 0, sizeof control);
      msg.msg_control = control.buf;
      msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
      struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
      memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
    }
    ssize_t n = sendmsg(fd, &msg, MSG_NOSIGNAL);
    if (n >= 0) {
      done += (size_t)n;
      continue;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return errno;
    struct pollfd p = {fd, POLLOUT, 0};
    if (waited >= 100) return ETIMEDOUT;
    poll(&p, 1, 10);
    waited += 10;
  }
  return 0;
}

static int buffer_arg(napi_env env, napi_value value, char **data, size_t *len) {
  if (napi_get_buffer_info(env, value, (void **)data, len) != 0) {
    napi_throw_type_error(env, NULL, "posix_spawn: expected a Buffer");
    return -1;
  }
  return 0;
}

static napi_value Request(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value args[4];
  napi_get_cb_info(env, info, &argc, args, NULL, NULL);
  int32_t fd = -1;
  bool stdin_pipe = false, merge_stderr = false;
  char *data = NULL;
  size_t len = 0;
  if (argc < 4 || napi_get_value_int32(env, args[0], &fd) != 0 || fd < 0) {
    napi_throw_type_error(env, NULL, "posix_spawn: request(fd, bytes, stdinPipe, mergeStderr)");
    return NULL;
  }
  if (buffer_arg(env, args[1], &data, &len) != 0) return NULL;
  napi_get_value_bool(env, args[2], &stdin_pipe);
  napi_get_value_bool(env, args[3], &merge_stderr);
  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
  int devnull = -1, rc = 0;
  if (stdin_pipe ? pipe2(in, O_CLOEXEC) != 0 : (devnull = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) rc = errno;
  else if (pipe2(out, O_CLOEXEC) != 0 || (!merge_stderr && pipe2(err, O_CLOEXEC) != 0)) rc = errno;
  if (!rc) {
    int ends[3] = {stdin_pipe ? in[0] : devnull, out[1], merge_stderr ? out[1] : err[1]};
    rc = send_all(fd, data, len, ends, 3);
  }
  // The server holds its own copies now (or never got them): ours are closed either way.
  if (devnull >= 0) close(devnull);
  if (in[0] >= 0) close(in[0]);
  if (out[1] >= 0) close(out[1]);
  if (err[1] >= 0) close(err[1]);
  in[0] = out[1] = err[1] = -1;
  if (rc) {
    close_pair(in);
    close_pair(out);
    close_pair(err);
    return int_value(env, -rc);
  }
  napi_value result;
  napi_create_array_with_length(env, 3, &result);
  napi_set_element(env, result, 0, int_value(env, stdin_pipe ? in[1] : -1));
  napi_set_element(env, result, 1, int_value(env, out[0]));
  napi_set_element(env, result, 2, int_value(env, merge_stderr ? -1 : err[0]));
  return result;
}

static napi_value Send(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value args[2];
  napi_get_cb_info(env, info, &argc, args, NULL, NULL);
  int32_t fd = -1;
  char *data = NULL;
  size_t len = 0;
  if (argc < 2 || napi_get_value_int32(env, args[0], &fd) != 0 || fd < 0) {
    napi_throw_type_error(env, NULL, "posix_spawn: send(fd, bytes)");
    return NULL;
  }
  if (buffer_arg(env, args[1], &data, &len) != 0) return NULL;
  return int_value(env, -send_all(fd, data, len, NULL, 0));
}

// Node-API module registration (what NAPI_MODULE_INIT expands to).
__attribute__((visibility("default"))) napi_value napi_register_module_v1(napi_env env, napi_value exports) {
  napi_value fn;
  napi_create_function(env, "spawn", 7, Spawn, NULL, &fn);
  napi_set_named_property(env, exports, "spawn", fn);
  napi_create_function(env, "reap", 4, Reap, NULL, &fn);
  napi_set_named_property(env, exports, "reap", fn);
  napi_create_function(env, "socketPair", 10, SocketPair, NULL, &fn);
  napi_set_named_property(env, exports, "socketPair", fn);
  napi_create_function(env, "closeFd", 7, CloseFd, NULL, &fn);
  napi_set_named_property(env, exports, "closeFd", fn);
  napi_create_function(env, "request", 7, Request, NULL, &fn);
  napi_set_named_property(env, exports, "request", fn);
  napi_create_function(env, "send", 4, Send, NULL, &fn);
  napi_set_named_property(env, exports, "send", fn);
  return exports;
}
