// The read-only tmux probe and the parsing/rendering of its answer. Pure: no service access here.

/** Field separator of the probe's format string (a real TAB byte inside single quotes). */
const TAB = '\t'

/** tmux format variables, in the order the probe prints them. */
const FIELDS = [
  'session_name',
  'window_index',
  'window_name',
  'pane_index',
  'pane_id',
  'window_active',
  'pane_active',
  'window_layout',
] as const

export const TMUX_FORMAT = FIELDS.map((f) => `#{${f}}`).join(TAB)

/**
 * The one command the plugin runs. Exit 1 (no reading) when `$TMUX_PANE` is unset, when tmux
 * cannot answer, or when the pane's tty is not this process's controlling terminal (an inherited
 * `$TMUX_PANE` names someone else's pane).
 */
export function probeCommand(pid: number): string {
  if (!Number.isSafeInteger(pid) || pid <= 0) throw new TypeError(`invalid pid ${pid}`)
  return [
    '[ -n "$TMUX_PANE" ] || exit 1',
    `self_tty=$(ps -o tty= -p ${pid} | tr -d ' ')`,
    `pane_tty=$(tmux display-message -t "$TMUX_PANE" -p '#{pane_tty}') || exit 1`,
    '[ -n "$self_tty" ] && [ "$pane_tty" = "/dev/$self_tty" ] || exit 1',
    `exec tmux display-message -t "$TMUX_PANE" -p '${TMUX_FORMAT}'`,
  ].join('\n')
}

export interface TmuxReading {
  session: string
  windowIndex: number
  windowName: string
  paneIndex: number
  paneId: string
  windowActive: boolean
  paneActive: boolean
  layout: string
}

const INDEX = /^\d+$/
const PANE_ID = /^%\d+$/
const FLAG = /^[01]$/

/** Parses the probe's stdout; undefined for anything that is not exactly one well-formed line. */
export function parseReading(output: string): TmuxReading | undefined {
  const line = output.endsWith('\n') ? output.slice(0, -1) : output
  if (line.includes('\n')) return undefined
  const parts = line.split(TAB)
  if (parts.length !== FIELDS.length) return undefined
  const [session, windowIndex, windowName, paneIndex, paneId, windowActive, paneActive, layout] = parts
  if (session === '' || !INDEX.test(windowIndex) || !INDEX.test(paneIndex) || !PANE_ID.test(paneId)) return undefined
  if (!FLAG.test(windowActive) || !FLAG.test(paneActive) || layout.trim() === '' || /\s/.test(layout)) return undefined
  return {
    session,
    windowIndex: Number(windowIndex),
    windowName,
    paneIndex: Number(paneIndex),
    paneId,
    windowActive: windowActive === '1',
    paneActive: paneActive === '1',
    layout,
  }
}

export const HEADER = 'tmux location (turn '

/** The state lines of a reading (everything but the header), which change suppression compares. */
export function renderState(r: TmuxReading): string {
  return [
    `session ${r.session}, window ${r.windowIndex} ${JSON.stringify(r.windowName)}, pane ${r.paneIndex} ${r.paneId}`,
    `window active=${r.windowActive ? 1 : 0}, pane active=${r.paneActive ? 1 : 0}, layout ${r.layout}`,
  ].join('\n')
}

/** The model-visible message: the header naming the turn, then the state lines. */
export function renderMessage(turn: number, state: string): string {
  return `${HEADER}${turn}):\n${state}`
}

/** The state lines of a previously injected message (undefined when it is not one of ours). */
export function stateOf(message: string): string | undefined {
  if (!message.startsWith(HEADER)) return undefined
  const newline = message.indexOf('\n')
  return newline < 0 ? undefined : message.slice(newline + 1)
}
