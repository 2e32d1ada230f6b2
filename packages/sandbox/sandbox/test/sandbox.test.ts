import { expect, it } from 'vitest'
import {
  SandboxError,
  describePolicy,
  detectDenial,
  isSandboxError,
  isSandboxMode,
  isSandboxedShell,
  type SandboxInvocation,
} from '../src/index.ts'

const confined: SandboxInvocation = {
  argv: ['bwrap'],
  runner: 'bwrap',
  enforcement: 'enforced',
  mode: 'workspace-write',
  notes: [],
}

it('recognises the three modes and nothing else', () => {
  expect(['read-only', 'workspace-write', 'danger-full-access'].every(isSandboxMode)).toBe(true)
  expect(isSandboxMode('full')).toBe(false)
  expect(isSandboxMode(undefined)).toBe(false)
})

it('detects filesystem and network refusals only for failed confined commands', () => {
  expect(
    detectDenial({
      exitCode: 1,
      output: 'ok\ntouch: cannot touch /etc/x: Read-only file system\n',
      invocation: confined,
    }),
  ).toEqual({
    kind: 'filesystem',
    evidence: 'touch: cannot touch /etc/x: Read-only file system',
  })
  expect(
    detectDenial({
      exitCode: 7,
      output: 'curl: (7) Failed to connect to example.com port 443: Network is unreachable',
      invocation: confined,
    })?.kind,
  ).toBe('network')
  expect(detectDenial({ exitCode: 0, output: 'Permission denied', invocation: confined })).toBeUndefined()
  expect(
    detectDenial({
      exitCode: 1,
      output: 'Permission denied',
      invocation: { ...confined, enforcement: 'none', mode: 'danger-full-access' },
    }),
  ).toBeUndefined()
  expect(detectDenial({ exitCode: 1, output: 'error: tests failed', invocation: confined })).toBeUndefined()
})

it('describes each mode in one sentence', () => {
  expect(
    describePolicy({ mode: 'workspace-write', workspaceRoot: '/w', writableRoots: ['/w', '/tmp'], network: false }),
  ).toBe('workspace-write: commands and file edits may write only under /w, /tmp; network access is off.')
  expect(describePolicy({ mode: 'read-only', workspaceRoot: '/w', writableRoots: [], network: true })).toContain(
    'write none; network access is allowed',
  )
  expect(
    describePolicy({ mode: 'danger-full-access', workspaceRoot: '/w', writableRoots: [], network: true }),
  ).toContain('without a sandbox')
})

it('tells sandbox errors and sandboxed shells apart', () => {
  expect(isSandboxError(new SandboxError('SANDBOX_UNAVAILABLE', 'x'))).toBe(true)
  expect(isSandboxError(new Error('x'))).toBe(false)
  expect(isSandboxedShell({ sandboxMode: () => 'read-only' })).toBe(true)
  expect(isSandboxedShell({})).toBe(false)
  expect(isSandboxedShell(null)).toBe(false)
})
