/** Patch layers `--world NAME` adds (bundles/world-NAME/cordis.patch.yml); `local` adds none. */
export declare const WORLD_PATCHES: Record<string, string>
/** The extra layer the session servers (dsh-acp, dsh-jsonrpc-agent) add with a world. */
export declare const WORLD_SESSION_PATCHES: Record<string, string>
/** The world names, `local` first. */
export declare const WORLD_NAMES: string[]
/** One line for a bin's `--help`, after the flag column. */
export declare const WORLD_HELP: string
/** The patch layer of `--world VALUE` (none for `local`), the session servers' extra layer, or a one-line usage error. */
export declare function worldPatch(value: string | undefined): { patch?: string; sessions?: string; error?: string }
