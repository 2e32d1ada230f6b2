// The launcher's choice of surface: `dsh` with no task in a real terminal (tmux) opens the TUI;
// the same command without a terminal keeps the one-shot behaviour.
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest'
import { runDsh } from '@dsh/cli-testkit'
import { TuiSession, killServer, workspace } from './harness.ts'

vi.setConfig({ testTimeout: 45_000 })

let open: TuiSession[] = []
afterEach(async () => {
  for (const s of open) await s.close()
  open = []
})
afterAll(() => killServer())

describe('dsh dispatch', () => {
  it('opens the terminal UI for a bare `dsh` in a terminal, and for --model / --permission-mode', async () => {
    const s = await TuiSession.start({
      steps: [{ text: 'Hi from the TUI.' }],
      args: ['--permission-mode', 'read-only'],
    })
    open.push(s)
    await s.waitFor(/read-only/)
    s.type('hello')
    s.keys('Enter')
    await s.waitFor(/Hi from the TUI\./)
    const bare = await TuiSession.start({ steps: [], args: [] })
    open.push(bare)
    await bare.waitFor(/deepseek-official\/deepseek-v4-flash · workspace-write/)
  })

  it('in a terminal, a bad --model, --permission-mode or -c without a session is one line and exit 2 before the UI starts', async () => {
    for (const [args, message] of [
      [['--model', 'nope/x'], /dsh: --model nope\/x: /],
      [['--permission-mode', 'yolo'], /dsh: unknown --permission-mode 'yolo'; valid: /],
      [['-c'], /dsh: --continue: no stored session for /],
    ] as const) {
      const s = await TuiSession.start({ steps: [], args: ['--profile', 'tui', ...args] })
      open.push(s)
      const screen = await s.waitFor(/\[exited \d+\]/)
      expect(screen).toMatch(message)
      expect(screen).toMatch(/\[exited 2\] \[modes: icanon echo ?\]/)
      // The UI never drew: no status line.
      expect(screen).not.toMatch(/deepseek-official\/deepseek-v4-flash ·/)
    }
  })

  it('keeps a task-given `dsh "task"` in a terminal one-shot', async () => {
    const s = await TuiSession.start({ steps: [{ text: 'One-shot answer.' }], args: ['say hi'] })
    open.push(s)
    const screen = await s.waitFor(/\[exited 0\]/)
    expect(screen).toContain('One-shot answer.')
    expect(screen).not.toMatch(/workspace-write/)
  })

  it('without a terminal, a bare `dsh` is unchanged (one-shot, asks for a task), and --profile tui refuses in one line', async () => {
    const { home, cwd } = workspace()
    const bare = await runDsh([], { cwd, env: { DSH_HOME: home, DEEPSEEK_API_KEY: 'sk-test' } })
    expect(bare.code).toBe(2)
    expect(bare.stderr).toMatch(/no task given/)
    const tui = await runDsh(['--profile', 'tui'], { cwd, env: { DSH_HOME: home, DEEPSEEK_API_KEY: 'sk-test' } })
    expect(tui.code).toBe(2)
    expect(tui.stderr.trim().split('\n')).toHaveLength(1)
    expect(tui.stderr).toMatch(/needs an interactive terminal/)
    const bad = await runDsh(['--profile', 'tui', '--bogus'], {
      cwd,
      env: { DSH_HOME: home, DEEPSEEK_API_KEY: 'sk-test' },
    })
    expect(bad.code).toBe(2)
    expect(bad.stderr).toMatch(/Unknown option '--bogus'/)
    const help = await runDsh(['--profile', 'tui', '--help'], { cwd, env: { DSH_HOME: home } })
    expect(help.code).toBe(0)
    expect(help.stdout).toMatch(/Esc cancels the running turn/)
  })
})
