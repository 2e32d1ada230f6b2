export declare const DEFAULT_PROFILE: string
export declare const PRINT_PROFILE: string
export declare const SUBCOMMAND_BINS: Record<'acp' | 'jsonrpc' | 'mcp' | 'plugin' | 'trust', { bin: string; url: URL }>
export interface LauncherArgs {
  action: 'help' | 'version' | 'run' | 'subcommand' | 'command' | 'error'
  profile: string
  profileGiven: boolean
  patches: string[]
  dumpConfig: boolean
  appArgs: string[]
  subcommand?: 'acp' | 'jsonrpc' | 'mcp' | 'plugin' | 'trust'
  command?: 'config' | 'doctor'
  error?: string
}
export declare function parseLauncherArgs(argv: readonly string[]): LauncherArgs
export declare function launcherHelp(version: string): string
export declare const SESSIONS_PATCH: string
export declare const OWN_COMMANDS: readonly ['config', 'doctor']
/** Patch layers `--world NAME` adds (bundles/world-NAME/cordis.patch.yml). */
export declare const WORLD_PATCHES: Record<string, string>
/** `dsh web --world NAME`: the per-workspace layers (@dsh/bundle-web-worlds) that replace the world's own. */
export declare const WEB_WORLD_PATCHES: Record<string, string[]>
