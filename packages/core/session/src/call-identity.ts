// Tool-call identities that are unique within one session, whatever the provider sends.
//
// Providers do not all mint unique ids: some OpenAI-compatible servers number calls per response
// (every turn's first call is `call_0_0`), and an adapter fills a missing id from the call's index
// (`call_0`). The session log, every face, ACP's `toolCallId`, SDK events and hooks key a call by
// its id, so a repeated id makes the second call overwrite the first. The loop gives each call its
// identity where it enters the log: the provider's id when the session has not used it yet (the
// common case, so a well-behaved provider sees its own ids sent back), else the id with a `-N`
// suffix (an empty id becomes `call-N`). The identity is what the history sends back to the
// provider too: consistent within the request, so tool results still pair with their calls.
//
// Folding an old log (written before identities were assigned, so ids may repeat) through
// `assign` in log order yields the identities the loop would have given: faces that replay such a
// log (ACP `session/load`) and an agent that resumes it agree on the names, and a new call never
// takes a name a replayed one got.

export class CallIdentities {
  private readonly used = new Set<string>()
  /** Next suffix to try per base, so a provider that repeats one id costs O(1) per call. */
  private readonly next = new Map<string, number>()

  /** The identity for a call the provider named `providerId`; reserves and returns it. */
  assign(providerId: string): string {
    if (providerId !== '' && !this.used.has(providerId)) {
      this.used.add(providerId)
      return providerId
    }
    const base = providerId === '' ? 'call' : providerId
    let n = this.next.get(base) ?? (providerId === '' ? 1 : 2)
    let candidate = `${base}-${n}`
    while (this.used.has(candidate)) candidate = `${base}-${++n}`
    this.next.set(base, n + 1)
    this.used.add(candidate)
    return candidate
  }
}
