import { readFileSync } from 'node:fs'
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
 *
 * `self` is either the controlling terminal's device path, read by the harness itself from
 * /proc (see `controllingTty`), which keeps the check valid when the shell executor confines the
 * probe in its own PID namespace, or, where /proc is not available, the harness pid, whose
 * terminal the probe then asks `ps` for.
 */
export function probeCommand(self: number | string): string {
  let selfTty: string
  if (typeof self === 'number') {
    if (!Number.isSafeInteger(self) || self <= 0) throw new TypeError(`invalid pid ${self}`)
    selfTty = `self_tty=/dev/$(ps -o tty= -p ${self} | tr -d ' ')`
  } else {
    if (!/^\/dev\/[A-Za-z0-9/]+$/.test(self)) throw new TypeError(`invalid tty path ${JSON.stringify(self)}`)
    selfTty = `self_tty='${self}'`
  }
  return [
    '[ -n "$TMUX_PANE" ] || exit 1',
    selfTty,
    `pane_tty=$(tmux display-message -t "$TMUX_PANE" -p '#{pane_tty}') || exit 1`,
    '[ "$self_tty" != /dev/ ] && [ "$pane_tty" = "$self_tty" ] || exit 1',
    `exec tmux display-message -t "$TMUX_PANE" -p '${TMUX_FORMAT}'`,
  ].join('\n')
}

/**
 * This process's controlling terminal as a device path, from the tty_nr field of
 * /proc/self/stat (Linux). `null`: no controlling terminal (so never in a tmux pane);
 * `undefined`: not determinable here (no /proc, or a terminal kind without a known path).
 */
export function controllingTty(stat?: string): string | null | undefined {
  let text = stat
  if (text === undefined) {
    try {
      text = readFileSync('/proc/self/stat', 'utf8')
    } catch {
      return undefined
    }
  }
  // The command name (field 2) may contain spaces and parentheses: fields restart after the last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ')
  const ttyNr = Number(fields[4])
  if (!Number.isInteger(ttyNr)) return undefined
  if (ttyNr === 0) return null
  const major = (ttyNr >> 8) & 0xfff
  const minor = (ttyNr & 0xff) | ((ttyNr >> 12) & 0xfff00)
  if (major >= 136 && major <= 143) return `/dev/pts/${(major - 136) * 256 + minor}`
  if (major === 4 && minor < 64) return `/dev/tty${minor}`
  return undefined
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
