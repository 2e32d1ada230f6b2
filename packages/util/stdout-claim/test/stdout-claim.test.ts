// The claim in a real child process (it rewires the process's stdout, so never in the test's own):
// only frames reach stdout, stray writes land on stderr in order, the claim is shared, and a
// reader that went away makes a frame write reject instead of crashing the process.
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const entry = fileURLToPath(new URL('../src/index.ts', import.meta.url))

function run(script: string, opts: { closeStdout?: boolean } = {}) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    if (opts.closeStdout) child.stdout.destroy()
    else child.stdout.on('data', (c: Buffer) => (stdout += c.toString()))
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()))
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}

describe('claimStdout', () => {
  it('sends frames to stdout and everything else to stderr', async () => {
    const r = await run(`
      import { claimStdout, claimedStdoutStream } from ${JSON.stringify(entry)}
      console.log('before-claim')
      const write = claimStdout()
      console.log('stray log')
      process.stdout.write('stray write\\n', () => process.stderr.write('callback ran\\n'))
      await write('{"frame":1}\\n')
      if (claimStdout() !== write) throw new Error('a second claim made a second writer')
      const stream = claimedStdoutStream()
      await new Promise((resolve) => stream.write('{"frame":2}\\n', resolve))
    `)
    expect(r.code, r.stderr).toBe(0)
    expect(r.stdout).toBe('before-claim\n{"frame":1}\n{"frame":2}\n')
    expect(r.stderr).toBe('stray log\nstray write\ncallback ran\n')
  })

  it('a frame written after the reader left rejects; the process lives on', async () => {
    const r = await run(
      `
      import { claimStdout, claimedStdoutStream } from ${JSON.stringify(entry)}
      const write = claimStdout()
      let failed = 0
      for (let i = 0; i < 50 && failed === 0; i++) await write('x'.repeat(65536)).catch(() => failed++)
      const stream = claimedStdoutStream()
      await new Promise((resolve) => { stream.once('error', resolve); stream.write('late', () => {}) })
      process.stderr.write('alive after ' + failed + ' failed write\\n')
    `,
      { closeStdout: true },
    )
    expect(r.code, r.stderr).toBe(0)
    expect(r.stderr).toBe('alive after 1 failed write\n')
  })
})
