// The headless profile's help text, printed by the launcher without a boot (`dsh.bundle.help` in
// package.json names this module). The text lives with the runner that parses the same flags.
export { HELP } from '@dsh/headless-runner/help'
