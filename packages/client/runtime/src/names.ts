// The named slots of the app layout. Each is a place in the page; the props an entry receives
// are typed in `SlotProps` below (extend it by declaration merging for your own slots).
import type { SessionRow } from '@dsh/web-protocol'
import type { PendingApproval, PendingQuestion, SessionFeedState } from '@dsh/client-connection'

export const SLOTS = {
  /** Top of the sidebar, under the wordmark (actions). */
  sidebarHeader: 'sidebar.header',
  /** Bottom of the sidebar (settings, language, theme). */
  sidebarFooter: 'sidebar.footer',
  /** The conversation of the open session: a single seat (the lowest order wins). */
  conversationMain: 'conversation.main',
  /** Above the conversation: pickers (model, permission mode) and actions, in order. */
  headerPickers: 'conversation.header.pickers',
  /** Under the conversation: the composer, a single seat. */
  composer: 'conversation.composer',
  /** Replaces the composer while the session waits for a human: keyed by `approval` or `question`, single seat per key. */
  composerTakeover: 'conversation.composer.takeover',
  /** Sections of the collapsible side panel (todo, files, context meter), in order. */
  sidePanel: 'panel.side',
  /** One tool call's card inside the conversation, keyed by tool name (unkeyed entries: the generic card). */
  toolView: 'tool.call.toolview',
  /** Page-wide overlays (dialogs), in order. */
  overlay: 'app.overlay',
  /** The Settings dialog: a single seat (the shell's key-only dialog is the fallback). */
  settingsDialog: 'settings.dialog',
  /** Controls inside the composer beside its buttons (model picker), in order. */
  composerTools: 'conversation.composer.tools',
} as const

export type SlotName = (typeof SLOTS)[keyof typeof SLOTS]

/** What the session-bound slots receive. */
export interface SessionSlotProps {
  sessionId: string
  /** The session's feed state (log from seq 0, live status, pending requests). */
  feed: SessionFeedState
  /** The session's row in the catalog, when known. */
  row?: SessionRow
}

declare module './slots.ts' {
  interface SlotProps {
    'conversation.main': SessionSlotProps
    'conversation.header.pickers': SessionSlotProps
    'conversation.composer': SessionSlotProps
    'conversation.composer.takeover': SessionSlotProps & { approval?: PendingApproval; question?: PendingQuestion }
    'panel.side': SessionSlotProps
    'sidebar.header': Record<string, never>
    'sidebar.footer': Record<string, never>
    'app.overlay': Record<string, never>
    'settings.dialog': { onClose: () => void }
    'conversation.composer.tools': SessionSlotProps
  }
}
