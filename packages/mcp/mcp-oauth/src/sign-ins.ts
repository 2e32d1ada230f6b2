// The sign-ins of a host's remote servers, outside any one server: which session has a human to
// ask, servers that found nobody to sign in at boot (connected again at the first step of a
// session with a human, or named once on stderr to a run without one), and `dsh mcp login`, which
// shows the authorization URL itself instead of asking.
import type { UserQuestionsService } from '@dsh/user-questions'
import { type ConsentRequest, McpAuthError } from './errors.ts'
import { askSignIn } from './sign-in.ts'

/** What sign-ins need of a server connection (@dsh/mcp-client's McpServerConnection). */
export interface SignInConnection {
  readonly name: string
  /** `signIn: 'needed'`: failed because it needs a human to sign in and found none. */
  status(): { signIn?: 'needed' }
  /** Settles once the current attempt connected or failed, at most `waitMs` from now. */
  settled(waitMs: number): Promise<void>
  /** Connects again (`force`: also a live connection). */
  restart(force?: boolean): void
  /** Forgets the stored sign-in. */
  logout(): Promise<boolean>
}

export interface SignInHost {
  /** The user-questions service, when mounted. */
  questions(): UserQuestionsService | undefined
  /** Opens an address in the user's browser (they asked dsh to). */
  open(url: string): void
  /** How long a sign-in waits for the browser to come back (`authWaitMs`). */
  waitMs(): number
  /** Tells a run without a human (one line, newline included). */
  tell(line: string): void
}

export class SignIns {
  /** The newest session a human answers questions in (sign-ins outside a call are asked there). */
  humanSession: string | undefined
  /** Servers whose missing sign-in was already reported to a run without a human. */
  private readonly reported = new Set<string>()
  /** Set by `login()`: shows the authorization URL instead of asking through user questions. */
  private override: ((request: ConsentRequest) => Promise<void>) | undefined

  constructor(private readonly host: SignInHost) {}

  /** A step of `sessionId` begins: it becomes the session sign-ins are asked in when a human answers there. */
  step(sessionId: string): void {
    if (this.host.questions()?.available(sessionId)) this.humanSession = sessionId
  }

  /**
   * Servers that need a human to sign in: with one at hand in this session they connect again (and
   * ask, bounded by `waitMs`); without one, one line per server names `dsh mcp login`.
   */
  async waiting(sessionId: string, connections: readonly SignInConnection[]): Promise<void> {
    const waiting = connections.filter((connection) => connection.status().signIn === 'needed')
    if (waiting.length === 0) return
    if (!this.host.questions()?.available(sessionId)) {
      for (const connection of waiting) {
        if (this.reported.has(connection.name)) continue
        this.reported.add(connection.name)
        this.host.tell(
          `dsh: MCP server "${connection.name}" needs you to sign in (OAuth) and no human is at hand; run "dsh mcp login ${connection.name}" once, then its tools are available\n`,
        )
      }
      return
    }
    await Promise.all(
      waiting.map((connection) => {
        const settled = connection.settled(this.host.waitMs())
        connection.restart()
        return settled
      }),
    )
  }

  /** Shows an authorization URL: through `login()`'s printer, or as a question to the human at hand. */
  async consent(request: ConsentRequest): Promise<void> {
    if (this.override) return this.override(request)
    return askSignIn(this.host.questions(), this.humanSession, request, (url) => this.host.open(url))
  }

  /**
   * Signs in to one server now (`dsh mcp login`): its stored sign-in is forgotten, `show` receives
   * the authorization URL; settles once the server connected or failed.
   */
  async login(connection: SignInConnection, show: (url: string) => void): Promise<void> {
    this.override = async (request) => {
      if (request.server === connection.name) show(request.url.href)
      else throw new McpAuthError('no-human', 'another server is signing in')
    }
    try {
      await connection.logout()
      const settled = connection.settled(this.host.waitMs())
      connection.restart(true)
      await settled
    } finally {
      this.override = undefined
    }
  }
}
