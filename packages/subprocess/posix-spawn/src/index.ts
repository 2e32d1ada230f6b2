// @dsh/posix-spawn: pipe processes started with posix_spawn (native/posix_spawn.c, built by
// scripts/build.mjs). A child gives the part of ChildProcess its users read: pid, stdin/stdout/
// stderr streams, exitCode/signalCode, kill(), 'exit' (code, signal) and 'close' once it exited
// and its pipes closed. Exits are collected with waitpid(WNOHANG) on SIGCHLD; a slow poll while
// children that keep the event loop alive run keeps it alive (as a ChildProcess handle does) and
// reaps them even if a SIGCHLD went unseen.
export {
  ADDON_PATH,
  addonLoadError,
  errnoName,
  loadAddon,
  nativeSpawn,
  signalName,
  type Addon,
  type NativeSpawnOptions,
  type SpawnedChild,
} from './addon.ts'
export { ChildBase } from './child.ts'
export {
  SpawnServer,
  SPAWN_SERVER_PATH,
  spawnServerUnavailable,
  type ServerSpawnOptions,
  type SpawnServerOptions,
} from './server.ts'
export { guard, watchdogStatus, watchdogUnavailable, WATCHDOG_PATH } from './watchdog.ts'
