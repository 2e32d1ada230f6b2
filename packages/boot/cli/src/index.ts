// @dsh/cli: the `dsh` bin. The launcher itself is plain JavaScript (bin/dsh.mjs, src/args.mjs).
export { DEFAULT_PROFILE, PRINT_PROFILE, SUBCOMMAND_BINS, launcherHelp, parseLauncherArgs } from './args.mjs'
