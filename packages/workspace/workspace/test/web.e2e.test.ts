// The real `dsh web` bin with the web bundle's workspace, directory-picker and storage rows:
// workspaces over HTTP, a damaged stored file, a restart, and a session created in a workspace.
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { DSH_BIN } from '@dsh/cli-testkit'

const roots: string[] = []
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true })
})

function startWeb(home: string, cwd: string) {
  const child = spawn(process.execPath, [DSH_BIN, 'web', '--no-open', '--port', '0'], {
    cwd,
    // The web bundle prints each storage warning on stderr (no debug logger needed), once.
    env: { PATH: process.env.PATH!, HOME: home, DSH_HOME: home },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)))
  const url = new Promise<string>((resolve, reject) => {
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d
      if (stdout.includes('\n')) resolve(stdout.split('\n')[0]!.replace(/\/$/, ''))
    })
    void exited.then(() => reject(new Error(`dsh web exited before printing a URL; stderr: ${stderr}`)))
  })
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000)
  void exited.then(() => clearTimeout(timer))
  const post = async (method: string, params: unknown) => {
    const base = await url
    const res = await fetch(`${base}/api/${method}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: base },
      body: JSON.stringify(params),
    })
    return {
      status: res.status,
      body: (await res.json()) as { result?: any; error?: { code: string; message: string; field?: string } },
    }
  }
  const stop = async () => {
    child.kill('SIGTERM')
    return exited
  }
  return { url, post, stop, stderr: () => stderr }
}

describe('workspaces in the real dsh web', () => {
  it('a damaged workspace file is one warning; workspaces are created over HTTP, survive a restart, and host a session', async () => {
    const root = mkdtempSync(join(tmpdir(), 'dsh-web-ws-'))
    roots.push(root)
    const home = join(root, 'home')
    const project = join(root, 'project')
    mkdirSync(project)
    writeFileSync(join(root, 'file.txt'), 'not a directory')
    mkdirSync(join(home, 'storage'), { recursive: true })
    writeFileSync(join(home, 'storage', 'workspace.json'), '{"version": 1, "entries": {"ws_a": {"na')

    const first = startWeb(home, root)
    await first.url
    const created = await first.post('workspaces.create', { path: project, name: 'Project' })
    expect(created).toMatchObject({
      status: 200,
      body: { result: { created: true, workspace: { name: 'Project', path: project } } },
    })
    const id = created.body.result.workspace.id as string
    expect(await first.post('workspaces.create', { path: join(root, 'file.txt') })).toMatchObject({
      status: 400,
      body: { error: { code: 'NOT_A_DIRECTORY', field: 'path' } },
    })
    expect(await first.post('workspaces.create', { path: join(root, 'missing') })).toMatchObject({
      status: 400,
      body: { error: { code: 'PATH_NOT_FOUND' } },
    })
    const listing = await first.post('host.listDirectory', { path: root })
    expect(listing.status).toBe(200)
    expect(listing.body.result.entries.map((e: { name: string }) => e.name)).toEqual(['home', 'project', 'file.txt'])
    expect(await first.stop()).toBe(0)
    const warnings = first
      .stderr()
      .split('\n')
      .filter((line) => line.includes('workspace.json'))
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toContain('malformed storage file')
    expect(readdirSync(join(home, 'storage')).some((name) => name.startsWith('workspace.json.corrupt-'))).toBe(true)

    const second = startWeb(home, root)
    expect(await second.post('workspaces.list', {})).toMatchObject({
      status: 200,
      body: { result: { workspaces: [{ id, name: 'Project', path: project }] } },
    })
    const session = await second.post('sessions.create', { workspaceId: id })
    expect(session).toMatchObject({ status: 200, body: { result: { session: { cwd: project } } } })
    expect(await second.stop()).toBe(0)
    expect(second.stderr()).not.toContain('workspace.json')
  })
})
