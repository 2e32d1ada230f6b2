// Terminal-session signalling, for the window node-pty leaves open: fork returns before the child
// has run, so a close can arrive while the future session leader still sits in our own session and
// process group. A plain child of this process stands in for that child: it is alive, it is ours,
// and no process has its pid as session id yet.
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { afterEach, describe, expect, it } from 'vitest'
import { sessionAlive, signalSession } from '../src/session.ts'

const children: ReturnType<typeof spawn>[] = []
afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL')
})

function child() {
  const c = spawn('sleep', ['30'], { stdio: 'ignore' })
  children.push(c)
  return c
}

describe.skipIf(process.platform !== 'linux')('a session leader before its setsid', () => {
  it('is alive, and a signal reaches it by pid without touching our own group', async () => {
    const c = child()
    await once(c, 'spawn')
    const pid = c.pid as number
    expect(sessionAlive(pid)).toBe(true)
    const exited = once(c, 'exit')
    signalSession(pid, 'SIGTERM')
    const [code, signal] = await exited
    expect({ code, signal }).toEqual({ code: null, signal: 'SIGTERM' })
    // This process shares the group the child had: reaching here means the group was not signalled.
    expect(sessionAlive(pid)).toBe(false)
  })

  it('a pid that is not our child is not taken for the leader', () => {
    // This process is not its own child and leads no session: nothing is alive under its pid.
    expect(sessionAlive(process.pid)).toBe(false)
  })
})
