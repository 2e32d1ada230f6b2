// Shell-local UI state shared by its components (panels, dialogs, the search field).
import { createContext, useContext, type RefObject } from 'react'

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
