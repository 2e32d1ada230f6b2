import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { runDsh } from '../src/index.ts'

describe('runDsh', () => {
  it('runs the real launcher with a minimal environment and collects both streams', async () => {
    const home = mkdtempSync(join(tmpdir(), 'dsh-cli-testkit-'))
    const version = await runDsh(['--version'], { cwd: home, env: { DSH_HOME: home } })
    expect(version).toMatchObject({ code: 0, signal: null, stderr: '' })
    expect(version.stdout).toMatch(/^dsh \d+\.\d+\.\d+\n$/)
    const bad = await runDsh(['--patch'], { cwd: home, env: { DSH_HOME: home, UNSET: undefined } })
    expect(bad.code).toBe(2)
    expect(bad.stderr).toMatch(/^dsh: --patch needs a file/)
  })
})
