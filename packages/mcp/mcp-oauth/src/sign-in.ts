// The human side of an OAuth sign-in: the question that shows the authorization address (with an
// offer to open it), and opening an address in the user's browser through the subprocess seam.
import type { Logger } from 'cordis'
import type { SubprocessService } from '@dsh/subprocess'
import type { UserQuestionsService } from '@dsh/user-questions'
import { type ConsentRequest, McpAuthError } from './errors.ts'

const OPEN_BROWSER = 'Open the browser'
const OPENED_MYSELF = 'I will open it myself'
const CANCEL_SIGN_IN = 'Cancel'

/**
 * Asks the human at hand in `sessionId` to sign in; `open` opens the address when they ask dsh to.
 * Rejects with McpAuthError when nobody can answer, or the sign-in was cancelled or not answered.
 */
export async function askSignIn(
  questions: UserQuestionsService | undefined,
  sessionId: string | undefined,
  request: ConsentRequest,
  open: (url: string) => void,
): Promise<void> {
  if (!questions?.available(sessionId)) {
    throw new McpAuthError(
      'no-human',
      `it needs you to sign in (OAuth) and no human is at hand; run "dsh mcp login ${request.server}"`,
    )
  }
  const outcome = await questions.ask(
    [
      {
        id: 'signin',
        header: 'MCP sign-in',
        question: `MCP server "${request.server}" needs you to sign in. Open this address in a browser and approve access (the browser then returns to dsh on this machine):\n${request.url.href}`,
        options: [
          { label: OPEN_BROWSER, description: 'dsh opens the address in your default browser' },
          { label: OPENED_MYSELF, description: 'you open the address yourself' },
          { label: CANCEL_SIGN_IN },
        ],
      },
    ],
    { ...(sessionId !== undefined ? { sessionId } : {}), signal: request.signal },
  )
  if (request.signal.aborted) return
  if (outcome.status !== 'answered')
    throw new McpAuthError('declined', `the sign-in was not answered (${outcome.reason})`)
  const choice = outcome.answers.signin?.selected[0]
  if (choice === CANCEL_SIGN_IN) throw new McpAuthError('declined', 'the sign-in was cancelled')
  if (choice === OPEN_BROWSER) open(request.url.href)
}

export interface BrowserOptions {
  /** The opener command (the URL is appended); default per platform. */
  command?: string[]
  cwd: string
  killGraceMs: number
  logger: Logger
}

/** The platform's opener: `open` (macOS), `start` (Windows), `xdg-open` (elsewhere). */
export function defaultBrowserCommand(platform: NodeJS.Platform = process.platform): string[] {
  return platform === 'darwin' ? ['open'] : platform === 'win32' ? ['cmd', '/c', 'start', '""'] : ['xdg-open']
}

/**
 * Opens an address in the user's browser through `ctx.subprocess` (best effort: the address was
 * shown to them as well); a failure to start the opener is logged.
 */
export function openInBrowser(subprocess: SubprocessService, url: string, options: BrowserOptions): void {
  const command = options.command ?? defaultBrowserCommand()
  try {
    const handle = subprocess.spawn({
      file: command[0],
      args: [...command.slice(1), url],
      cwd: options.cwd,
      env: { set: {} },
      kill: { graceMs: options.killGraceMs },
      retentionMode: 'none',
    })
    void handle.exited.then((exit) => {
      if (exit.spawnError) options.logger.warn('could not open a browser (%s): %s', command[0], exit.spawnError.message)
    })
  } catch (error) {
    options.logger.warn('could not open a browser (%s): %s', command[0], (error as Error).message)
  }
}
