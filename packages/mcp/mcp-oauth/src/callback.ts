// The loopback end of an OAuth redirect (`http://127.0.0.1:PORT/callback`): a small HTTP server
// that waits for one authorization code at a time, matched by the `state` dsh sent, and answers
// the browser with a one-line page.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { McpAuthError, oneLine } from './errors.ts'

export const CALLBACK_PATH = '/callback'

/** The loopback end of the redirect: one pending sign-in at a time, matched by `state`. */
export class CallbackServer {
  private server?: Server
  private pending?: { state: string; resolve(code: string): void; reject(error: Error): void }
  port?: number

  constructor(private readonly serverName: string) {}

  async listen(preferred?: number): Promise<number> {
    if (this.server && this.port !== undefined) return this.port
    const server = createServer((req, res) => this.handle(req.url ?? '/', res))
    const bind = (port: number) =>
      new Promise<number>((resolve, reject) => {
        server.once('error', reject)
        server.listen(port, '127.0.0.1', () => {
          server.off('error', reject)
          resolve((server.address() as AddressInfo).port)
        })
      })
    let port: number
    try {
      port = await bind(preferred ?? 0)
    } catch (error) {
      if (preferred === undefined) throw error
      port = await bind(0)
    }
    server.unref()
    this.server = server
    this.port = port
    return port
  }

  expect(state: string): Promise<string> {
    this.pending?.reject(new McpAuthError('failed', 'a newer sign-in replaced this one'))
    return new Promise((resolve, reject) => (this.pending = { state, resolve, reject }))
  }

  private handle(path: string, res: import('node:http').ServerResponse): void {
    const url = new URL(path, 'http://127.0.0.1')
    const page = (status: number, text: string) => {
      res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' })
      res.end(`<!doctype html><meta charset="utf-8"><title>dsh</title><p>${escapeHtml(text)}</p>`)
    }
    if (url.pathname !== CALLBACK_PATH) {
      page(404, 'Not found.')
      return
    }
    const pending = this.pending
    if (!pending || url.searchParams.get('state') !== pending.state) {
      page(400, 'This sign-in link is not the one dsh is waiting for (or it was already used).')
      return
    }
    this.pending = undefined
    const error = url.searchParams.get('error')
    const code = url.searchParams.get('code')
    if (error || !code) {
      const description = url.searchParams.get('error_description')
      pending.reject(
        new McpAuthError(
          'declined',
          `the authorization server refused the sign-in: ${oneLine(error ?? 'no code')}${description ? ` (${oneLine(description)})` : ''}`,
        ),
      )
      page(400, `Sign-in to MCP server "${this.serverName}" failed. You can close this tab.`)
      return
    }
    pending.resolve(code)
    page(200, `Signed in to MCP server "${this.serverName}". You can close this tab and return to dsh.`)
  }

  close(): void {
    this.pending?.reject(new McpAuthError('failed', 'the sign-in was stopped'))
    this.pending = undefined
    this.server?.close()
    this.server = undefined
    this.port = undefined
  }
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
