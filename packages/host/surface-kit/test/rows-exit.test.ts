// The live-session row fold (against a real session log) and the exit hand-off to the loader.
import { afterEach, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import SessionStore from '@dsh/session'
import { appExit, ExitCode, foldSessionRow, humanPromptOf, sessionRowOf } from '../src/index.ts'

describe('sessionRowOf / foldSessionRow', () => {
  it('counts turns and events, keeps the latest title and the first human prompt', async () => {
    const ctx = new Context()
    await ctx.plugin(SessionStore)
    const s = ctx.sessions.create({ cwd: '/w' })
    const text = (t: string) => [{ type: 'text' as const, text: t }]
    s.append('turn/start', { turn: 0 })
    s.append('user/message', { content: text('x'.repeat(250)), source: { kind: 'human' } })
    s.append('session/title', { title: 'first', source: 'user' })
    s.append('turn/end', { turn: 0, reason: 'completed' })
    const row = sessionRowOf(s.id, s.cwd, s.events)
    expect(row).toMatchObject({ id: s.id, cwd: '/w', turns: 1, events: 4, title: 'first' })
    expect(row.firstPrompt).toHaveLength(200)
    expect(row.createdAt).toBe(s.events[0].time)
    const next = s.append('turn/start', { turn: 1 })
    s.append('user/message', { content: text('later'), source: { kind: 'human' } })
    foldSessionRow(row, next)
    foldSessionRow(row, s.events.at(-1)!)
    expect(row).toMatchObject({ turns: 2, events: 6, updatedAt: s.events.at(-1)!.time })
    expect(row.firstPrompt).toHaveLength(200)
    expect(humanPromptOf(s.events.at(-1)!)).toBe('later')
    expect(humanPromptOf(s.events[0])).toBeUndefined()
  })

  it('dates an empty log now', () => {
    expect(sessionRowOf('e', '/w', [], 42)).toEqual({
      id: 'e',
      cwd: '/w',
      createdAt: 42,
      updatedAt: 42,
      turns: 0,
      events: 0,
    })
  })
})

describe('appExit', () => {
  const before = process.exitCode
  afterEach(() => {
    process.exitCode = before
  })
  it('hands the code to the loader when one is mounted', () => {
    const ctx = new Context()
    const codes: Array<number | undefined> = []
    ctx.provide('loader', { exit: (code?: number) => void codes.push(code) })
    appExit(ctx)(ExitCode.usage)
    expect(codes).toEqual([2])
    expect(process.exitCode).toBe(before)
  })
  it('leaves the code on the process without one', () => {
    appExit(new Context())(ExitCode.outputClosed)
    expect(process.exitCode).toBe(141)
  })
})
