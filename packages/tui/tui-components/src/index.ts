// @dsh/tui-components: the terminal UI's components over @mariozechner/pi-tui, free of Cordis:
// the transcript folded from session events, tool cards, takeover panels, the status line, `@`
// file mentions and the colour palette. @dsh/bundle-tui wires them to the services.
export { palette, markdownTheme, editorTheme, selectListTheme, type Palette, type Style } from './theme.ts'
export { highlightCode } from './highlight.ts'
export {
  ToolCard,
  toolSubject,
  diffLines,
  sanitize,
  BASH_TAIL_LINES,
  DIFF_LINES,
  EXPANDED_LINES,
  PROGRESS_CELLS,
  progressLine,
  type ToolState,
  type ToolResultView,
  type ToolProgressView,
} from './tool-card.ts'
export { Transcript, AssistantEntry, TextBlock, firstBlockBoundary } from './transcript.ts'
export { ApprovalPanel, ConfirmPanel, QuestionPanel, Picker } from './panels.ts'
export { StatusLine, statusText, gitBranch, tildePath, type StatusFields } from './status.ts'
export {
  MentionProvider,
  listFiles,
  mentionQuery,
  rankFiles,
  rankCandidates,
  replaceProvider,
  MAX_FILES,
  SHOWN_OTHERS,
  type MentionCandidate,
} from './mentions.ts'
export { TemplatePanel, templateFiller, type TemplatePick } from './template-panel.ts'
