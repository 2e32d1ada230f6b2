import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import { collectSse } from './sse.ts'

const BIN = fileURLToPath(new URL('../bin/dsh-llm-mock-server.mjs', import.meta.url))
const dir = mkdtempSync(join(tmpdir(), 'dsh-mock-bin-'))
const children: ChildProcess[] = []
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL')
})

function run(args: string[]) {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  children.push(child)
  let stdout = ''
  let stderr = ''
  child.stdout!.on('data', (d) => (stdout += d))
  child.stderr!.on('data', (d) => (stderr += d))
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  const firstLine = new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', () => {
      if (stdout.includes('\n')) resolve(stdout.split('\n')[0])
    })
    child.on('exit', (code) => reject(new Error(`exited ${code} before printing a URL: ${stderr}`)))
  })
  firstLine.catch(() => {}) // only awaited by tests that expect a URL
  return { child, exited, firstLine, output: () => ({ stdout, stderr }) }
}

describe('dsh-llm-mock-server bin', () => {
  it('prints the base URL, serves the script and exits 0 on SIGTERM', async () => {
    const script = join(dir, 'script.yaml')
    writeFileSync(script, 'steps:\n  - text: from the bin\n')
    const proc = run(['--script', script, '--port', '0'])
    const baseURL = await proc.firstLine
    expect(baseURL).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/)
    const response = await fetch(`${baseURL}/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }], stream: true }),
    })
    const { frames, done } = await collectSse(response)
    expect(done).toBe(true)
    expect(frames.map((f) => f.choices[0]?.delta?.content ?? '').join('')).toBe('from the bin')
    proc.child.kill('SIGTERM')
    expect(await proc.exited).toBe(0)
    expect(proc.output().stdout).toBe(`${baseURL}\n`)
  })

  it('exits 1 with one line naming the file and step for a bad script', async () => {
    const script = join(dir, 'bad.json')
    writeFileSync(script, JSON.stringify({ steps: [{ text: 'ok' }, { usage: { prompt: 1, cacheHit: 2 } }] }))
    const proc = run(['--script', script])
    expect(await proc.exited).toBe(1)
    const { stdout, stderr } = proc.output()
    expect(stdout).toBe('')
    expect(stderr).toBe(`dsh-llm-mock-server: ${script}: steps[1].usage.cacheHit: cacheHit (2) exceeds prompt (1)\n`)
  })

  it('exits 2 for usage errors', async () => {
    const missing = run([])
    expect(await missing.exited).toBe(2)
    expect(missing.output().stderr).toMatch(/^dsh-llm-mock-server: --script FILE is required\nusage: /)
    const badPort = run(['--script', 'x.yaml', '--port', 'http'])
    expect(await badPort.exited).toBe(2)
    expect(badPort.output().stderr).toMatch(/--port expects a port number 0-65535, got 'http'/)
  })
})
