// Process-group signalling and liveness. A group is addressed by its leader's pid (the pgid).
import { readdirSync, readFileSync } from 'node:fs'

/** Sends `signal` to every process of group `pgid`. Returns false when the group is gone. */
export function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, signal)
    return true
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false
    // EPERM: a member changed credentials (setuid); it is alive but not ours to signal.
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/**
 * True while group `pgid` has a member that is not a zombie. Orphaned members are reparented to
 * PID 1, which in containers often never reaps them; a group of zombies holds no resources and
 * counts as gone.
 */
export function groupAlive(pgid: number): boolean {
  if (!signalGroup(pgid, 0)) return false
  if (process.platform !== 'linux') return true
  let entries: string[]
  try {
    entries = readdirSync('/proc')
  } catch {
    return true
  }
  for (const entry of entries) {
    if (entry.charCodeAt(0) < 48 || entry.charCodeAt(0) > 57) continue
    let stat: string
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'latin1')
    } catch {
      continue
    }
    // Fields after the parenthesised command name: state ppid pgrp ...
    const close = stat.lastIndexOf(')')
    const fields = stat.slice(close + 2).split(' ')
    if (Number(fields[2]) === pgid && fields[0] !== 'Z' && fields[0] !== 'X') return true
  }
  return false
}

/** Resolves after `ms`, or early when `until()` becomes true (polled). */
export async function waitFor(until: () => boolean, ms: number, pollMs = 20): Promise<boolean> {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    if (until()) return true
    await new Promise((resolve) => setTimeout(resolve, Math.min(pollMs, Math.max(1, deadline - Date.now()))))
  }
  return until()
}
