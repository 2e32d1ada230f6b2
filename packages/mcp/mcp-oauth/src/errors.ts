// The errors and the consent request of a sign-in, shared by the provider, its loopback callback
// and the hosts that show the authorization URL to a human.

/** A sign-in that cannot go on: retrying the connection would not help, so it is not retried. */
export class McpAuthError extends Error {
  constructor(
    readonly reason: 'no-human' | 'declined' | 'timeout' | 'failed',
    message: string,
  ) {
    super(message)
    this.name = 'McpAuthError'
  }
}

export interface ConsentRequest {
  server: string
  url: URL
  /** Aborted when the callback arrived (the question is no longer needed). */
  signal: AbortSignal
}

/** One line of at most 300 characters (for error messages that quote a server's answer). */
export const oneLine = (text: string) => text.replace(/\s+/g, ' ').slice(0, 300)
