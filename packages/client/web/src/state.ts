// Shell-local UI state shared by its components (panels, dialogs, the search field).
import { createContext, useContext, type RefObject } from 'react'
import { Store } from '@dsh/client-runtime'

/**
 * True while the halves the first screen needs (the manifest's entries without `defer`) are still
 * loading: the shell's fallback views wait, so a page whose conversation half is on its way renders
 * the log once (by that half), not first as the fallback's text and then again.
 */
export const firstHalvesLoading = new Store<boolean>(false)

let bootPreview: HTMLElement | null = null
/** Keeps the static shell's session preview (host-rendered text of the last turns) before React replaces the shell. */
export function keepBootPreview(): void {
  bootPreview = globalThis.document?.querySelector<HTMLElement>('#root .boot-preview') ?? null
}
/** The kept preview when it shows `sessionId` (once: whoever takes it shows it). */
export function takeBootPreview(sessionId: string): HTMLElement | null {
  const node = bootPreview?.dataset.sessionId === sessionId ? bootPreview : null
  if (node) bootPreview = null
  return node
}

export interface ShellState {
  panelOpen: boolean
  togglePanel(): void
  /** The sidebar as a drawer on narrow screens. */
  drawerOpen: boolean
  toggleDrawer(): void
  closeDrawer(): void
  dialog: 'shortcuts' | 'settings' | 'palette' | undefined
  openDialog(dialog: 'shortcuts' | 'settings' | 'palette' | undefined): void
  newSession(): void
  searchRef: RefObject<HTMLInputElement | null>
  launchCwd?: string
}

export const ShellContext = createContext<ShellState | null>(null)

export function useShell(): ShellState {
  const state = useContext(ShellContext)
  if (!state) throw new Error('useShell: outside the app shell')
  return state
}
