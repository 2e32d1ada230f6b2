#!/usr/bin/env node
// Landlock launcher: applies a Landlock ruleset (and a seccomp socket filter when the network is
// off) to its own main thread, then execve()s the target on that same thread, so the target and
// every descendant inherit the confinement. Plain JavaScript so it starts without a TypeScript loader.
//
//   node landlock-exec.mjs --probe                      prints {"abi":N,"seccomp":bool} and exits 0
//   node landlock-exec.mjs <base64 JSON spec> -- argv...
//
// spec: {"writable": [abs paths], "network": bool, "hidden"?: [abs paths],
//        "mounts"?: {"namespace": "mnt:[N]", "pins": [abs dirs], "readOnly": [abs paths]},
//        "controlFd"?: N}
// `controlFd` (3 or above) stays open across the execve: the spawn server that sandbox-local
// starts confined this way (`-- spawn-server`) gets its control socket there and starts every
// command of the policy from inside the confinement (see README).
// With `mounts` (only inside a private mount namespace of its own, which `namespace`, the
// harness's mount namespace, must differ from) it first binds each pin onto itself and each
// read-only path read-only: the project control files inside a writable root (see README).
// Before the rulesets it drops every capability (bounding, ambient, inheritable, permitted,
// effective) and sets no_new_privs, so a harness running as root does not hand root's powers on.
// Exit status 125 with one line on stderr when confinement cannot be applied: the target never runs.
import { createRequire } from 'node:module'
import {
  accessSync,
  closeSync,
  constants,
  fstatSync,
  openSync,
  readdirSync,
  readlinkSync,
  statSync,
  writeSync,
} from 'node:fs'
import { delimiter, dirname, isAbsolute, join } from 'node:path'

const require = createRequire(import.meta.url)

function die(message) {
  writeSync(2, `dsh-sandbox(landlock): ${message}\n`)
  process.exit(125)
}

let koffi
try {
  koffi = require('koffi')
} catch (error) {
  die(`cannot load koffi: ${error.message}`)
}
const libc = koffi.load('libc.so.6')
const syscall = libc.func('long syscall(long nr, ...)')
const prctl = libc.func('int prctl(int option, unsigned long a2, unsigned long a3, unsigned long a4, unsigned long a5)')
const execve = libc.func('int execve(const char *path, const char **argv, const char **envp)')
const signal = libc.func('void *signal(int sig, void *handler)')
const fcntl = libc.func('int fcntl(int fd, int cmd, ...)')
const errno = () => koffi.errno()
const mount = libc.func(
  'int mount(const char *source, const char *target, const char *fstype, unsigned long flags, const void *data)',
)

const SYS = { landlock_create_ruleset: 444, landlock_add_rule: 445, landlock_restrict_self: 446 }
const SECCOMP = {
  x64: { audit: 0xc000003e, seccomp: 317, socket: 41, io_uring_setup: 425, x32: true },
  arm64: { audit: 0xc00000b7, seccomp: 277, socket: 198, io_uring_setup: 425, x32: false },
}[process.arch]
const CAPSET = { x64: 126, arm64: 91 }[process.arch]

const FS = {
  EXECUTE: 1n << 0n,
  WRITE_FILE: 1n << 1n,
  READ_FILE: 1n << 2n,
  READ_DIR: 1n << 3n,
  REMOVE_DIR: 1n << 4n,
  REMOVE_FILE: 1n << 5n,
  MAKE_CHAR: 1n << 6n,
  MAKE_DIR: 1n << 7n,
  MAKE_REG: 1n << 8n,
  MAKE_SOCK: 1n << 9n,
  MAKE_FIFO: 1n << 10n,
  MAKE_BLOCK: 1n << 11n,
  MAKE_SYM: 1n << 12n,
  REFER: 1n << 13n,
  TRUNCATE: 1n << 14n,
  IOCTL_DEV: 1n << 15n,
}
const READ_ACCESS = FS.EXECUTE | FS.READ_FILE | FS.READ_DIR
const FILE_RIGHTS = FS.EXECUTE | FS.WRITE_FILE | FS.READ_FILE | FS.TRUNCATE | FS.IOCTL_DEV

/** Every filesystem right the running kernel's ABI knows. */
function handledFs(abi) {
  let all = (1n << 13n) - 1n
  if (abi >= 2) all |= FS.REFER
  if (abi >= 3) all |= FS.TRUNCATE
  if (abi >= 5) all |= FS.IOCTL_DEV
  return all
}

function landlockAbi() {
  const abi = Number(syscall(SYS.landlock_create_ruleset, 'void *', null, 'size_t', 0, 'uint32_t', 1))
  return abi > 0 ? abi : 0
}

// Registered by name: the syscalls below refer to them in their type strings.
koffi.struct('landlock_ruleset_attr', { fs: 'uint64_t', net: 'uint64_t', scoped: 'uint64_t' })
koffi.pack('landlock_path_beneath_attr', { allowed: 'uint64_t', fd: 'int32_t' })
const SockFilter = koffi.struct('sock_filter', { code: 'uint16_t', jt: 'uint8_t', jf: 'uint8_t', k: 'uint32_t' })

function addPath(ruleset, path, allowed) {
  let fd
  try {
    // O_PATH: a handle to the inode without opening it for reading.
    fd = openSync(path, 0o10000000)
  } catch {
    return // a missing writable root is simply not granted
  }
  // A rule on a non-directory may only carry rights that apply to files.
  let directory = true
  try {
    directory = fstatSync(fd).isDirectory()
  } catch {}
  if (!directory) allowed &= FILE_RIGHTS
  const rc = Number(
    syscall(
      SYS.landlock_add_rule,
      'int',
      ruleset,
      'int',
      1,
      'landlock_path_beneath_attr *',
      { allowed, fd },
      'uint32_t',
      0,
    ),
  )
  const code = errno()
  closeSync(fd)
  if (rc !== 0) die(`landlock_add_rule(${path}) failed (errno ${code})`)
}

/**
 * Drops every capability for good: the bounding set (so an execve as uid 0 gains nothing back),
 * the ambient and inheritable sets, then permitted and effective. Without CAP_SETPCAP (not root)
 * the bounding set cannot shrink, but then there is nothing in it to regain either.
 */
function dropCapabilities() {
  if (prctl(38, 1, 0, 0, 0) !== 0) die(`prctl(PR_SET_NO_NEW_PRIVS) failed (errno ${errno()})`)
  for (let cap = 0; cap < 64; cap++) {
    if (prctl(24, cap, 0, 0, 0) === 0) continue // PR_CAPBSET_DROP
    const code = errno()
    if (code === 22) break // EINVAL: past the last capability this kernel knows
    if (code !== 1) die(`prctl(PR_CAPBSET_DROP, ${cap}) failed (errno ${code})`) // EPERM: unprivileged, nothing to drop
  }
  prctl(47, 4, 0, 0, 0) // PR_CAP_AMBIENT_CLEAR_ALL; fails harmlessly on kernels without ambient caps
  if (CAPSET === undefined) die(`no capset syscall number for architecture ${process.arch}`)
  const header = Buffer.alloc(8)
  header.writeUInt32LE(0x20080522, 0) // _LINUX_CAPABILITY_VERSION_3, pid 0 (this thread)
  const data = Buffer.alloc(24) // two {effective, permitted, inheritable} words, all zero
  if (Number(syscall(CAPSET, 'void *', header, 'void *', data)) !== 0) die(`capset failed (errno ${errno()})`)
}

/**
 * Read access to everything except `hidden`: the directories on the way to a hidden path may be
 * listed, every other entry below them is readable, and the hidden paths themselves are not.
 * Entries created later in those directories stay unreadable (Landlock rules bind inodes).
 */
function addReadRules(ruleset, hidden) {
  if (hidden.length === 0) return addPath(ruleset, '/', READ_ACCESS)
  const hide = new Set(hidden)
  const ancestors = new Set()
  for (const path of hidden)
    for (let dir = dirname(path); ; dir = dirname(dir)) {
      ancestors.add(dir)
      if (dir === '/') break
    }
  const walk = (dir) => {
    addPath(ruleset, dir, FS.READ_DIR)
    let names
    try {
      names = readdirSync(dir)
    } catch {
      return
    }
    for (const name of names) {
      const full = join(dir, name)
      if (hide.has(full)) continue
      if (ancestors.has(full)) walk(full)
      else addPath(ruleset, full, READ_ACCESS)
    }
  }
  walk('/')
}

function applyLandlock(abi, spec) {
  const fsAll = handledFs(abi)
  const net = !spec.network && abi >= 4 ? 3n : 0n // BIND_TCP | CONNECT_TCP, with no port allowed
  // Scopes (ABI 6): no signals to processes outside the domain; no abstract unix sockets when offline.
  const scoped = abi >= 6 ? 2n | (spec.network ? 0n : 1n) : 0n
  const size = abi >= 6 ? 24 : abi >= 4 ? 16 : 8
  const ruleset = Number(
    syscall(
      SYS.landlock_create_ruleset,
      'landlock_ruleset_attr *',
      { fs: fsAll, net, scoped },
      'size_t',
      size,
      'uint32_t',
      0,
    ),
  )
  if (ruleset < 0) die(`landlock_create_ruleset failed (errno ${errno()})`)
  addReadRules(ruleset, spec.hidden ?? [])
  // Character devices a shell writes to in every mode.
  const devWrite = FS.WRITE_FILE | FS.READ_FILE | (abi >= 3 ? FS.TRUNCATE : 0n) | (abi >= 5 ? FS.IOCTL_DEV : 0n)
  for (const device of ['/dev/null', '/dev/zero', '/dev/full', '/dev/tty', '/dev/random', '/dev/urandom', '/dev/ptmx'])
    addPath(ruleset, device, devWrite)
  addPath(ruleset, '/dev/pts', devWrite)
  for (const root of spec.writable) addPath(ruleset, root, fsAll)
  if (prctl(38, 1, 0, 0, 0) !== 0) die(`prctl(PR_SET_NO_NEW_PRIVS) failed (errno ${errno()})`)
  const rc = Number(syscall(SYS.landlock_restrict_self, 'int', ruleset, 'uint32_t', 0))
  if (rc !== 0) die(`landlock_restrict_self failed (errno ${errno()})`)
}

/** A seccomp filter that refuses socket(AF_INET|AF_INET6, ...) and io_uring_setup with EACCES. */
function applySeccomp() {
  const { audit, seccomp, socket, io_uring_setup, x32 } = SECCOMP
  const LD = 0x20,
    JEQ = 0x15,
    JGE = 0x35,
    RET = 0x06
  const ALLOW = 0x7fff0000,
    DENY = 0x00050000 | 13
  const prog = [
    { code: LD, jt: 0, jf: 0, k: 4 }, // arch
    { code: JEQ, jt: 1, jf: 0, k: audit },
    { code: RET, jt: 0, jf: 0, k: DENY }, // foreign ABI: refuse
    { code: LD, jt: 0, jf: 0, k: 0 }, // syscall number
    x32 ? { code: JGE, jt: 7, jf: 0, k: 0x40000000 } : { code: JEQ, jt: 0, jf: 0, k: 0xffffffff },
    { code: JEQ, jt: 5, jf: 0, k: io_uring_setup },
    { code: JEQ, jt: 0, jf: 3, k: socket },
    { code: LD, jt: 0, jf: 0, k: 16 }, // args[0], low 32 bits
    { code: JEQ, jt: 2, jf: 0, k: 2 }, // AF_INET
    { code: JEQ, jt: 1, jf: 0, k: 10 }, // AF_INET6
    { code: RET, jt: 0, jf: 0, k: ALLOW },
    { code: RET, jt: 0, jf: 0, k: DENY },
    { code: RET, jt: 0, jf: 0, k: DENY },
  ]
  const filter = koffi.alloc(SockFilter, prog.length)
  koffi.encode(filter, koffi.array(SockFilter, prog.length), prog)
  const fprog = Buffer.alloc(16)
  fprog.writeUInt16LE(prog.length, 0)
  fprog.writeBigUInt64LE(BigInt(koffi.address(filter)), 8)
  if (prctl(38, 1, 0, 0, 0) !== 0) die(`prctl(PR_SET_NO_NEW_PRIVS) failed (errno ${errno()})`)
  const rc = Number(syscall(seccomp, 'unsigned int', 1, 'unsigned int', 0, 'void *', fprog))
  if (rc !== 0) die(`seccomp(SET_MODE_FILTER) failed (errno ${errno()})`)
}

const MS = { RDONLY: 1, REMOUNT: 32, BIND: 4096, REC: 16384 }

/**
 * Pins (a directory bound onto itself: still writable, but rename and rmdir refuse a mount point)
 * shallowest first, then read-only binds. Only in a mount namespace other than the harness's, so
 * nothing here can reach the host's mounts; before the capabilities go and before Landlock (which
 * forbids mount changes once it is in force).
 */
function applyMounts(mounts) {
  let own
  try {
    own = readlinkSync('/proc/self/ns/mnt')
  } catch (error) {
    die(`cannot read /proc/self/ns/mnt: ${error.message}`)
  }
  if (own === mounts.namespace) die('refusing to change mounts: not in a mount namespace of its own')
  for (const dir of mounts.pins) {
    if (mount(dir, dir, null, MS.BIND | MS.REC, null) !== 0) die(`bind ${dir} failed (errno ${errno()})`)
  }
  for (const path of mounts.readOnly) {
    if (mount(path, path, null, MS.BIND | MS.REC, null) !== 0) die(`bind ${path} failed (errno ${errno()})`)
    if (mount(null, path, null, MS.REMOUNT | MS.BIND | MS.RDONLY, null) !== 0)
      die(`read-only remount of ${path} failed (errno ${errno()})`)
  }
  // The working directory still points below the new mounts (at what was there before them), so
  // relative paths would miss them: enter it again by name, which lands on the top mount.
  try {
    process.chdir(process.cwd())
  } catch (error) {
    die(`cannot re-enter the working directory: ${error.message}`)
  }
}

function which(file, env) {
  if (file.includes('/')) return file
  for (const dir of (env.PATH ?? '/usr/local/bin:/usr/bin:/bin').split(delimiter)) {
    if (!dir) continue
    const candidate = join(dir, file)
    try {
      accessSync(candidate, constants.X_OK)
      if (statSync(candidate).isFile()) return candidate
    } catch {}
  }
  return undefined
}

const args = process.argv.slice(2)
if (args[0] === '--probe') {
  writeSync(1, JSON.stringify({ abi: landlockAbi(), seccomp: SECCOMP !== undefined }) + '\n')
  process.exit(0)
}
const separator = args.indexOf('--')
if (separator !== 1 || args.length < 3) die('usage: landlock-exec.mjs <spec> -- argv...')
let spec
try {
  spec = JSON.parse(Buffer.from(args[0], 'base64').toString('utf8'))
} catch {
  die('the spec is not base64 JSON')
}
const absolutePaths = (list) => Array.isArray(list) && list.every((p) => typeof p === 'string' && isAbsolute(p))
if (
  !absolutePaths(spec.writable) ||
  typeof spec.network !== 'boolean' ||
  (spec.hidden !== undefined && !absolutePaths(spec.hidden))
) {
  die('the spec needs {writable: [absolute paths], network: boolean, hidden?: [absolute paths]}')
}
const mounts = spec.mounts
if (
  mounts !== undefined &&
  (mounts === null ||
    typeof mounts.namespace !== 'string' ||
    !absolutePaths(mounts.pins) ||
    !absolutePaths(mounts.readOnly))
) {
  die('spec.mounts needs {namespace: string, pins: [absolute paths], readOnly: [absolute paths]}')
}
if (spec.controlFd !== undefined && !(Number.isInteger(spec.controlFd) && spec.controlFd >= 3))
  die('spec.controlFd must be a descriptor number of 3 or above')
const argv = args.slice(2)
const env = { ...process.env }
const file = which(argv[0], env)
if (!file) {
  writeSync(2, `dsh-sandbox(landlock): ${argv[0]}: command not found\n`)
  process.exit(127)
}
const abi = landlockAbi()
if (abi < 1) die('Landlock is not available on this kernel')
if (mounts) applyMounts(mounts)
dropCapabilities()
if (!spec.network) {
  if (!SECCOMP) die(`no seccomp filter for architecture ${process.arch}; cannot turn the network off`)
  applySeccomp()
}
applyLandlock(abi, spec)
// Node ignores SIGPIPE and SIGXFSZ; ignored dispositions survive execve, so restore the defaults.
signal(13, null)
signal(25, null)
// Node marks every inherited descriptor close-on-exec at startup; stdio must reach the target.
for (const fd of [0, 1, 2]) fcntl(fd, 2, 'int', 0)
// F_SETFD 0 fails on a descriptor that is not open: a server without its socket would be useless.
if (spec.controlFd !== undefined && fcntl(spec.controlFd, 2, 'int', 0) !== 0)
  die(`descriptor ${spec.controlFd} is not open (errno ${errno()})`)
const envp = Object.entries(env).map(([k, v]) => `${k}=${v}`)
execve(file, [...argv, null], [...envp, null])
die(`execve(${file}) failed (errno ${errno()})`)
