// @dsh/app-prelink: loading the prelinked row modules and stacks written by scripts/prelink.mjs.
export { loadPrelinked, readSource, type PrelinkDecision, type PrelinkVariant, type StackCache } from './prelink.ts'
