// A server's `notifications/message` in the dsh log: one line naming the server (and its logger),
// at the level the MCP level maps to.
import { describe, expect, it } from 'vitest'
import type { Logger } from 'cordis'
import { logServerMessage } from '../src/notices.ts'

function recorder() {
  const lines: string[] = []
  const at = (level: string) => (text: string) => void lines.push(`${level} ${text}`)
  const logger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } as unknown as Logger
  return { lines, logger }
}

describe('server log messages', () => {
  it('maps each MCP level to a dsh log level and names the server and its logger', () => {
    const { lines, logger } = recorder()
    for (const level of ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'] as const)
      logServerMessage(logger, 'db', { level, data: level })
    logServerMessage(logger, 'db', { level: 'info', logger: 'pool', data: { open: 3 } })
    expect(lines).toEqual([
      'debug MCP server "db" [debug]: debug',
      'info MCP server "db" [info]: info',
      'info MCP server "db" [notice]: notice',
      'warn MCP server "db" [warning]: warning',
      'error MCP server "db" [error]: error',
      'error MCP server "db" [critical]: critical',
      'error MCP server "db" [alert]: alert',
      'error MCP server "db" [emergency]: emergency',
      'info MCP server "db" (pool) [info]: {"open":3}',
    ])
  })
})
