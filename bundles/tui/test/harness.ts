// The tmux harness of the TUI's end-to-end tests lives in @dsh/cli-testkit/tui, so tests of other
// packages (mcp-client's list_changed test) drive the TUI without reaching into this bundle's tests.
export * from '@dsh/cli-testkit/tui'
