// Terminal-session signalling. A PTY child is a session leader; with job control its descendants
// may sit in several process groups of that session, so cleanup addresses every process whose
// session id is the leader's pid. Linux reads /proc; elsewhere only the leader's group is reached.
import { readdirSync, readFileSync } from 'node:fs'
import { groupAlive, signalGroup } from './group.ts'

interface ProcStat {
  pid: number
  state: string
  pgrp: number
  session: number
}

/**
 * The processes of session `sid`, and the leader itself before it has called setsid: node-pty
 * returns from fork without waiting for the child to run, so on a loaded machine the child can
 * still sit in our own session and process group when a close arrives. It counts (only while it
 * is our child, so a reused pid is never taken for it), and it is signalled by pid, never by its
 * group, which is still ours.
 */
function members(sid: number): ProcStat[] {
  const out: ProcStat[] = []
  let entries: string[]
  try {
    entries = readdirSync('/proc')
  } catch {
    return out
  }
  for (const entry of entries) {
    const first = entry.charCodeAt(0)
    if (first < 48 || first > 57) continue
    let stat: string
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'latin1')
    } catch {
      continue
    }
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const session = Number(fields[3])
    if (session !== sid && !(Number(entry) === sid && Number(fields[1]) === process.pid)) continue
    out.push({ pid: Number(entry), state: fields[0], pgrp: Number(fields[2]), session })
  }
  return out
}

export function sessionAlive(sid: number): boolean {
  if (process.platform !== 'linux') return groupAlive(sid)
  return members(sid).some((p) => p.state !== 'Z' && p.state !== 'X')
}

export function signalSession(sid: number, signal: NodeJS.Signals): void {
  if (process.platform !== 'linux') {
    signalGroup(sid, signal)
    return
  }
  const groups = new Set<number>([sid])
  for (const member of members(sid)) {
    if (member.session === sid) groups.add(member.pgrp)
    else signalPid(member.pid, signal)
  }
  for (const pgrp of groups) signalGroup(pgrp, signal)
}

function signalPid(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal)
  } catch {
    // Gone already (ESRCH), or no longer ours to signal.
  }
}
