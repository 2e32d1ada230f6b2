import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import { SpillError } from '@dsh/spill'
import LocalSpillStore, { safeSegment } from '../src/index.ts'

async function store(config: { dir?: string }) {
  const ctx = new Context()
  await ctx.plugin(LocalSpillStore, config)
  return { ctx, spill: ctx.spillStore as LocalSpillStore }
}

describe('@dsh/spill-local', () => {
  it('saves the whole text to <dir>/<session>/<call>.txt with private permissions', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'spill-'))
    const { spill } = await store({ dir })
    const text = 'héllo\n'.repeat(10_000)
    const record = await spill.save({ sessionId: 's-1', callId: 'call_1', toolName: 'bash', text })
    expect(record.locator).toBe(join(dir, 's-1', 'call_1.txt'))
    expect(record.bytes).toBe(Buffer.byteLength(text))
    expect(readFileSync(record.locator, 'utf8')).toBe(text)
    expect(statSync(record.locator).mode & 0o777).toBe(0o600)
    expect(record.hint).toMatch(/read/)
    // no temp files left behind
    expect(readdirSync(join(dir, 's-1'))).toEqual(['call_1.txt'])
  })

  it('never overwrites an earlier spill of the same call id', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'spill-'))
    const { spill } = await store({ dir })
    const a = await spill.save({ sessionId: 's', callId: 'c', toolName: 't', text: 'first' })
    const b = await spill.save({ sessionId: 's', callId: 'c', toolName: 't', text: 'second' })
    expect(a.locator).not.toBe(b.locator)
    expect(readFileSync(a.locator, 'utf8')).toBe('first')
    expect(readFileSync(b.locator, 'utf8')).toBe('second')
  })

  it('keeps hostile ids inside the spill directory', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'spill-'))
    const { spill } = await store({ dir })
    const record = await spill.save({ sessionId: '../../etc', callId: '../passwd', toolName: 't', text: 'x' })
    expect(record.locator.startsWith(dir + '/')).toBe(true)
    expect(safeSegment('..', 'f')).toBe('f')
    expect(safeSegment('a/b c', 'f')).toBe('a_b_c')
    const none = await spill.save({ callId: 'k', toolName: 't', text: 'y' })
    expect(none.locator).toBe(join(dir, '_no-session', 'k.txt'))
  })

  it('defaults to $DSH_HOME/sessions/spill', async () => {
    const home = mkdtempSync(join(tmpdir(), 'spill-home-'))
    const saved = process.env.DSH_HOME
    process.env.DSH_HOME = home
    try {
      const { spill } = await store({})
      expect(spill.root).toBe(join(home, 'sessions', 'spill'))
    } finally {
      if (saved === undefined) delete process.env.DSH_HOME
      else process.env.DSH_HOME = saved
    }
  })

  it('rejects with a SpillError naming the path when the directory cannot be created', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'spill-'))
    const blocker = join(dir, 'file')
    const { writeFileSync } = await import('node:fs')
    writeFileSync(blocker, 'not a dir')
    const { spill } = await store({ dir: blocker })
    const error = await spill.save({ sessionId: 's', callId: 'c', toolName: 't', text: 'x' }).catch((e) => e)
    expect(error).toBeInstanceOf(SpillError)
    expect(error.code).toBe('ENOTDIR')
    expect(error.message).toContain(blocker)
  })

  it('never follows a symlink swapped in for the session directory or the root', async () => {
    const base = mkdtempSync(join(tmpdir(), 'spill-swap-'))
    const dir = join(base, 'spill')
    const attacker = join(base, 'attacker')
    mkdirSync(attacker)
    const { spill } = await store({ dir })
    const first = await spill.save({ sessionId: 's', callId: 'a', toolName: 'bash', text: 'first' })
    expect(first.locator).toBe(join(dir, 's', 'a.txt'))

    // A session directory that is a symlink (planted before the first spill of that session).
    symlinkSync(attacker, join(dir, 'planted'))
    const planted = await spill
      .save({ sessionId: 'planted', callId: 'c', toolName: 'bash', text: 'attacker-controlled' })
      .catch((e) => e)
    expect(planted).toBeInstanceOf(SpillError)
    expect(planted.code).toBe('UNSAFE_DIR')
    expect(planted.message).toContain(join(dir, 'planted'))

    // An existing session directory replaced by a symlink.
    rmSync(join(dir, 's'), { recursive: true })
    symlinkSync(attacker, join(dir, 's'))
    const swapped = await spill
      .save({ sessionId: 's', callId: 'b', toolName: 'bash', text: 'attacker-controlled' })
      .catch((e) => e)
    expect(swapped.code).toBe('UNSAFE_DIR')

    // The whole root replaced by a symlink after the first save.
    rmSync(dir, { recursive: true })
    symlinkSync(attacker, dir)
    const root = await spill
      .save({ sessionId: 'fresh', callId: 'd', toolName: 'bash', text: 'attacker-controlled' })
      .catch((e) => e)
    expect(root.code).toBe('UNSAFE_DIR')
    expect(root.message).toContain('a symlink was swapped in')

    expect(readdirSync(attacker)).toEqual([])
    expect(existsSync(join(attacker, 'c.txt'))).toBe(false)
  })

  it('tightens a loose per-session directory to 0700', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'spill-'))
    mkdirSync(join(dir, 's'), { mode: 0o777 })
    const { spill } = await store({ dir })
    await spill.save({ sessionId: 's', callId: 'c', toolName: 't', text: 'x' })
    expect(statSync(join(dir, 's')).mode & 0o777).toBe(0o700)
  })
})
