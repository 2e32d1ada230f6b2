#!/usr/bin/env node
// @ts-check
// The registry recount: maps every paragraph of the reference plugin registry
// (../shared/reference/plugin-registry.txt, one paragraph per plugin, no titles) to the workspace
// package(s) that build it, and prints how many are built. A paragraph is matched by the start of
// its text (the `key` of an entry below), so a paragraph added to or reworded in the registry is
// reported as unmapped instead of being counted silently.
//
// Each entry either names packages (`packages`; every one must be a workspace package, or the run
// fails naming it), optionally with `partial` saying what of the paragraph is not built, or says
// `missing` (what the paragraph would be called). Status: built, partial, missing.
//
// Usage: node scripts/registry-count.mjs [--registry FILE] [--json] [--markdown]
//   --registry  the registry text (default: ../shared/reference/plugin-registry.txt beside this
//               checkout, else $DSH_PLUGIN_REGISTRY)
//   --json      print {built, partial, missing, total, paragraphs: [...]} instead of the summary
//   --markdown  print the docs/registry-status.md page
// Exit: 0; 1 when a paragraph has no entry, an entry matches no paragraph, or a named package does
// not exist; 2 when the registry cannot be read.
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('..', import.meta.url))

/** @typedef {{ key: string, packages?: string[], partial?: string, missing?: string }} Entry */

/** @type {Entry[]} One entry per registry paragraph, in the registry's order. */
export const MAP = [
  { key: 'Automation-only Agent Client Protocol server over JSON-RPC s', packages: ['@dsh/acp'] },
  { key: 'Two-sided Typert RPC endpoint for Host and Client Cordis env', packages: ['@dsh/api-gateway'] },
  {
    key: 'Two-sided BFF for Host Remote capabilities selected by this ',
    packages: ['@dsh/api-models', '@dsh/api-plugins', '@dsh/api-settings'],
  },
  { key: 'The private local implementation of `@deepseek-ai/dsh-attach', packages: ['@dsh/attachment-local'] },
  { key: 'The shared dsh core as a profile bundle: `cordis.patch.yml` ', packages: ['@dsh/bundle-base'] },
  { key: 'The dsh one-shot bundle. `cordis.patch.yml` rides directly o', packages: ['@dsh/bundle-headless'] },
  { key: 'The dsh browser-surface bundle. `cordis.patch.yml` rides ove', packages: ['@dsh/bundle-web'] },
  { key: "Wire consumer layer: the client plugin's apply mounts `ctx.c", packages: ['@dsh/client-runtime'] },
  { key: 'Hot reload for script-loaded client plugins. The web bundle ', packages: ['@dsh/client-hmr'] },
  { key: 'Locale plugin: LocaleRuntime — the `zh`/`en` preference stor', packages: ['@dsh/client-runtime'] },
  { key: "Client module system: the browser peer of Node's internal ES", packages: ['@dsh/client-runtime'] },
  { key: 'Client cordis boot and React-free object services: SlotRegis', packages: ['@dsh/client-runtime'] },
  { key: 'The agent-preset surfaces: a General-settings row choosing w', packages: ['@dsh/ui-agent-preset'] },
  { key: 'Client command API (`ctx.commandUi`): the session-keyed comm', packages: ['@dsh/ui-commands'] },
  { key: 'Conversation domain: skeleton (header/tabs/composer/empty st', packages: ['@dsh/ui-conversation'] },
  { key: 'Produced-files and clickable-reference feature owner. The No', packages: ['@dsh/ui-deliverables'] },
  { key: 'In-app directory browsing surface: the browser half of the b', packages: ['@dsh/ui-directory-picker'] },
  { key: 'Native directory-picker surface: the browser half of the nat', packages: ['@dsh/ui-directory-picker'] },
  { key: 'Goal surface plugin, browser half: the `GoalBar` strip is th', packages: ['@dsh/ui-goal'] },
  { key: 'Input trigger pipeline plugin: `/` and `@` detection under t', packages: ['@dsh/ui-input-trigger'] },
  { key: 'Web background-job feature owner: contributes one entry to `', packages: ['@dsh/ui-jobs'] },
  { key: 'Shell plugin: three-column AppFrame (drag handles and conces', packages: ['@dsh/client-web'] },
  { key: 'Per-message feedback plugin, browser half: a Like/Dislike pa', packages: ['@dsh/ui-message-feedback'] },
  { key: 'Model selection plugin, browser half: TWO entries over ONE p', packages: ['@dsh/ui-model-selection'] },
  {
    key: 'Permission browser surfaces for two different lifetimes. The',
    packages: ['@dsh/ui-settings', '@dsh/ui-pickers'],
  },
  { key: 'Plan-mode status chip, a pure browser surface plugin. The br', packages: ['@dsh/ui-plan'] },
  { key: "The settings domain's base layer, with two roles and no pres", packages: ['@dsh/ui-settings'] },
  { key: 'Settings shell, ownerless copy, and durable product-onboardi', packages: ['@dsh/ui-settings'] },
  {
    key: 'Models settings and product-onboarding plugin. The same clie',
    packages: ['@dsh/ui-settings', '@dsh/api-models'],
  },
  {
    key: 'Read-only **Plugin list** tab for Web Settings. The browser ',
    packages: ['@dsh/ui-settings', '@dsh/plugin-inventory'],
  },
  {
    key: 'The **Plugins** settings section and its **Plugin configurat',
    packages: ['@dsh/ui-settings', '@dsh/api-plugins'],
  },
  { key: 'Sidebar shell plugin: the wordmark, New Session action, layo', packages: ['@dsh/client-web'] },
  { key: 'Skill invocation source, browser half: registers the `/`-tri', packages: ['@dsh/ui-skill'] },
  { key: 'Web subagent feature owner: contributes the lazily expandabl', packages: ['@dsh/ui-subagent'] },
  { key: 'Theme plugin: ThemeRuntime over the --dsw-* token base style', packages: ['@dsh/client-runtime'] },
  { key: 'Client Tool presentation plugin. `ui-conversation` dispatche', packages: ['@dsh/ui-tool'] },
  { key: 'Trajectory renders a turn-aware event ledger with selectable', packages: ['@dsh/ui-trajectory'] },
  { key: 'Web question feature plugin: its browser half registers the ', packages: ['@dsh/ui-takeover'] },
  { key: 'The browser plugin that reconstructs durable top-level workf', packages: ['@dsh/ui-workflow-run'] },
  {
    key: 'Shared Workspace browser and picker plugin. `WorkspaceBrowse',
    packages: ['@dsh/client-web', '@dsh/workspace'],
  },
  {
    key: 'Worker-thread implementation of the `@deepseek-ai/dsh-code-r',
    packages: ['@dsh/code-runtime-worker-thread'],
  },
  { key: 'Human-facing `/compact` control over `ctx.compaction`. The p', packages: ['@dsh/command-compact'] },
  { key: 'The **basic compaction backend**: a `BasicCompactionEngine` ', packages: ['@dsh/compaction-basic'] },
  {
    key: 'The replay-safe model-free pruning service (`ctx.toolResultP',
    packages: ['@dsh/compaction-tool-result-pruner'],
  },
  { key: 'Per-session workspace instruction loading for `AGENTS.md`-co', packages: ['@dsh/agent-instructions'] },
  { key: '`ctx.sessionReferenceResolver` prepares bounded, read-only s', packages: ['@dsh/session-reference'] },
  { key: 'Opt-in durable context with the current zoned time, the brow', packages: ['@dsh/time-context'] },
  { key: 'Opt-in durable context naming the tmux session, window, and ', packages: ['@dsh/tmux-context'] },
  { key: 'Agent interface, registry, process-local initiator scope, an', packages: ['@dsh/agent'] },
  { key: 'The deployment default used when an entry point creates an A', packages: ['@dsh/agent-default-model'] },
  { key: 'THE concrete agent plugin and loop driver. Its package-inter', packages: ['@dsh/agent-loop'] },
  { key: 'The row an agent preset carries to say which form of its too', packages: ['@dsh/agent-tool-presentation'] },
  { key: 'Event-sourced session log and in-memory store. A `Session` i', packages: ['@dsh/session'] },
  { key: 'System prompt assembly registry. Plugins contribute ordered ', packages: ['@dsh/system-prompt'] },
  { key: 'Tool registry and execution pipeline. Tool plugins register ', packages: ['@dsh/tools'] },
  { key: 'File-backed credentials provider: four layers, one honest pr', packages: ['@dsh/credentials-local'] },
  { key: 'Shared lifecycle owner for one E2B sandbox. The filesystem a', packages: ['@dsh/e2b'] },
  { key: 'E2B implementation of the `@deepseek-ai/dsh-fs` provider con', packages: ['@dsh/fs-e2b'] },
  { key: 'E2B implementation of the `@deepseek-ai/dsh-subprocess` seam', packages: ['@dsh/subprocess-e2b'] },
  { key: 'ACP automation server app: the default agent spine, client-c', packages: ['@dsh/acp-app'] },
  { key: 'The **default executor-less, UI-less agent spine** as ONE Co', packages: ['@dsh/bundle-agent-spine'] },
  {
    key: 'Browser half of dynamic dual-half plugin packages. The host-',
    packages: ['@dsh/cordis-client-runner'],
  },
  {
    key: 'The host half of model-mounted dynamic packages: the definit',
    packages: ['@dsh/cordis-host-runner'],
  },
  { key: 'The self-referential Cordis toolset: five model-facing tools', packages: ['@dsh/tool-cordis'] },
  { key: 'Cordis dynamic-plugin surfaces, browser half: a frame-wide p', packages: ['@dsh/ui-cordis'] },
  { key: 'Trigger-independent session feedback plus human-facing `/fee', packages: ['@dsh/command-feedback'] },
  { key: 'Host-owned editable feedback for one finalized assistant mes', packages: ['@dsh/message-feedback'] },
  { key: 'The **local-filesystem implementation** of the `ctx.fs` prov', packages: ['@dsh/fs-local'] },
  { key: 'The **fs-observation-policy plugin**: it records observed pr', packages: ['@dsh/fs-observation-policy'] },
  { key: '`SandboxedFileSystem` extends `LocalFileSystem` and register', packages: ['@dsh/fs-sandbox'] },
  { key: 'The **model-facing filesystem tools** — `read`, `read_image`', packages: ['@dsh/tool-fs'] },
  { key: 'The **model-facing filesystem discovery tools**—`glob`, `gre', packages: ['@dsh/tool-fs-search'] },
  { key: 'Standalone model-facing `str_replace_editor` over `ctx.fs`. ', packages: ['@dsh/tool-str-replace-editor'] },
  { key: 'Human-facing `/goal` control over `ctx.goals`. The plugin re', packages: ['@dsh/command-goal'] },
  { key: 'Event-sourced same-session goal state. The service retains o', packages: ['@dsh/goal'] },
  { key: 'Same-session continuation driver for `ctx.goals`. It turns a', packages: ['@dsh/goal-round-driver'] },
  { key: 'The model-facing control tools for `ctx.goals`: `get_goal`, ', packages: ['@dsh/tool-goal'] },
  { key: 'An advisory loop-breaker, not a model-facing tool: it never ', packages: ['@dsh/repeat-tool-reminder'] },
  { key: 'Tool-call timeout enforcer: a single `tools/execute` around-', packages: ['@dsh/timeout-policy'] },
  { key: 'A cordis plugin that runs the supported command-hook subset ', packages: ['@dsh/hooks-claude-code'] },
  { key: "A cordis plugin that runs the supported subset of a user's e", packages: ['@dsh/hooks-codex'] },
  {
    key: 'The API gateway shared by every client consists of the TypeS',
    packages: ['@dsh/web-protocol', '@dsh/api-gateway'],
  },
  { key: 'The **adaptive chooser** of the directory-picker seam: a nod', packages: ['@dsh/directory-picker'] },
  { key: 'The **in-app browsing backend** of the directory-picker seam', packages: ['@dsh/directory-picker'] },
  { key: 'The **native-OS-chooser backend** of the directory-picker se', packages: ['@dsh/directory-picker'] },
  { key: 'SPA dist server for the Web shell: a function plugin (config', packages: ['@dsh/frontend-static'] },
  { key: 'Read-only Host projection of the current Cordis Loader tree.', packages: ['@dsh/plugin-inventory'] },
  { key: 'Web HTTP and upgrade-route registration plugin (default-expo', packages: ['@dsh/webserver'] },
  { key: 'Plugin-owned human-command registry consumed by interactive ', packages: ['@dsh/commands'] },
  { key: 'User-facing permission presets through `ctx.permissionPreset', packages: ['@dsh/permission-presets'] },
  { key: 'Model-facing `ask_user_question` tool over `ctx.userQuestion', packages: ['@dsh/tool-ask-user'] },
  { key: 'Channel-neutral one-shot approval seam. `ctx.approval.reques', packages: ['@dsh/user-approval'] },
  { key: 'User-interaction Service Definition. It owns `ctx.userQuesti', packages: ['@dsh/user-questions'] },
  { key: 'Process-local implementation of the `@deepseek-ai/dsh-jobs` ', packages: ['@dsh/jobs'] },
  { key: 'The model-facing controller for `ctx.jobs`: three kind-indep', packages: ['@dsh/tool-jobs'] },
  { key: 'Provider-neutral LLM vocabulary and abstract service. This p', packages: ['@dsh/llm'] },
  { key: 'DeepSeek chat-completions adapter for the harness LLM seam: ', packages: ['@dsh/llm-deepseek'] },
  { key: 'Generic multi-provider adapter for the harness LLM seam back', packages: ['@dsh/llm-pi-ai'] },
  { key: 'Function plugin that applies exact-provider retry policy thr', packages: ['@dsh/llm-retry'] },
  { key: 'Replay-aware token measurement through the singleton `ctx.to', packages: ['@dsh/token-meter'] },
  { key: 'The **LSP capability seam**: an abstract `LspService` (`ctx.', packages: ['@dsh/lsp'] },
  { key: 'A **generic stdio language-server backend** for `ctx.lsp`. O', packages: ['@dsh/lsp-stdio'] },
  { key: 'The model-facing **`lsp` tool** over `ctx.lsp`: one read-onl', packages: ['@dsh/tool-lsp'] },
  { key: 'MCP client bridge plugin: connects to external Model Context', packages: ['@dsh/mcp-client'] },
  { key: 'Logged, per-agent plan collaboration state with deployment-o', packages: ['@dsh/plan-mode'] },
  { key: 'Per-preset agent composition. A **preset** is a directory ho', packages: ['@dsh/agent-presets'] },
  { key: 'The agent persona as a composable row. It can either shadow ', packages: ['@dsh/persona'] },
  { key: 'Configurable registry service for package-owned runtime inva', packages: ['@dsh/invariants'] },
  { key: 'Local implementation of the `dsh-sandbox` seam. It selects a', packages: ['@dsh/sandbox-local'] },
  { key: 'The single owner of sandbox-policy resolution: the deploymen', packages: ['@dsh/sandbox-policy'] },
  { key: '`dsh-schedule` gives future live root Agents three Session-s', packages: ['@dsh/schedule'] },
  { key: 'The `jsonrpc` plugin serves newline-delimited JSON-RPC over ', packages: ['@dsh/sdk-server'] },
  { key: 'Web Session-log download control over the host-streamed ZIP ', packages: ['@dsh/session-log-export'] },
  { key: 'Concrete `ctx.sessionQuery` provider. `SqliteSessionQueryEng', packages: ['@dsh/session-query-sqlite'] },
  { key: 'Workspace-authorized model tools over `ctx.sessionQuery`. Th', packages: ['@dsh/tool-session-query'] },
  { key: 'Semantic durability policy for persisted agents. It checkpoi', packages: ['@dsh/session-checkpoint-policy'] },
  { key: 'The JSONL durable session-persistence backend — a concrete `', packages: ['@dsh/session-persistence-jsonl'] },
  {
    key: 'A SQLite durable session-persistence backend — a second `Ses',
    packages: ['@dsh/session-persistence-sqlite'],
  },
  { key: 'Session-projection Service Definition and drive registry. It', packages: ['@dsh/session-projection'] },
  { key: 'The persisted projection cache (`ctx.sessionProjectionCache`', packages: ['@dsh/session-projection-cache'] },
  { key: 'Function plugin registering the `sessionStats` projection un', packages: ['@dsh/session-stats'] },
  {
    key: 'The OpenTelemetry backend for the telemetry seam — the only ',
    packages: ['@dsh/session-telemetry-otel'],
  },
  { key: 'Log-backed session titles with an immediate deterministic fa', packages: ['@dsh/session-title'] },
  { key: 'Optional `ctx.sessionTitle` provider that summarizes every e', packages: ['@dsh/session-title-llm'] },
  { key: 'Optional `ctx.sessionTitle` provider that summarizes the fir', packages: ['@dsh/session-title-llm'] },
  { key: 'File-backed settings provider. One YAML or JSON document car', packages: ['@dsh/settings-file'] },
  { key: 'Local Service Provider for the `@deepseek-ai/dsh-shell` exec', packages: ['@dsh/bash-local'] },
  { key: 'Sandbox-consuming Service Provider for the `@deepseek-ai/dsh', packages: ['@dsh/bash-sandbox'] },
  { key: 'Local PowerShell Service Provider for the `@deepseek-ai/dsh-', missing: 'pwsh-local' },
  { key: 'Sandbox-consuming PowerShell implementation of the `ctx.shel', missing: 'pwsh-sandbox' },
  { key: 'The tool-independent shell environment plugin: owns the `ctx', packages: ['@dsh/shell-env'] },
  { key: 'The model-facing `bash` tool registered over the `ctx.shell`', packages: ['@dsh/tool-bash'] },
  { key: 'Model-facing `bash(command)` backed by one owner-scoped `ctx', packages: ['@dsh/tool-bash-persistent'] },
  { key: 'The model-facing `pwsh` tool registered over the `ctx.shell`', missing: 'tool-pwsh' },
  { key: 'Pure agent skill provider registry.', packages: ['@dsh/skill'] },
  { key: 'Optional bundled skill provider that contributes `dsh-badge`', packages: ['@dsh/skill-badge'] },
  { key: 'Local filesystem provider for the `ctx.skills` registry.', packages: ['@dsh/skill-filesystem'] },
  { key: 'The model-facing skill catalog and `skill` tool.', packages: ['@dsh/tool-skill'] },
  { key: 'The **local-filesystem** implementation of the `@deepseek-ai', packages: ['@dsh/spill-local'] },
  { key: 'The **tool-result spill policy**: a `tools/post-execute` tra', packages: ['@dsh/spill-policy'] },
  { key: 'Storage hub (`ctx.storage`) for non-session data: a named ba', packages: ['@dsh/storage'] },
  { key: 'Domain data form for the DeepSeek Harness storage hub: expos', packages: ['@dsh/storage'] },
  { key: 'JSON backend for the storage hub: one human-readable `<unit>', packages: ['@dsh/storage-json'] },
  { key: 'SQLite backend for the storage hub: registers as backend `sq', packages: ['@dsh/storage-sqlite'] },
  { key: 'The subagent seam lets one agent delegate work to a child th', packages: ['@dsh/subagent'] },
  { key: 'The ACP provider runs each subagent in a fresh subprocess an', packages: ['@dsh/subagent-acp'] },
  { key: 'This package registers the fixed `claude-code` subagent prov', packages: ['@dsh/subagent-claude-code'] },
  { key: 'This package registers the fixed `codex` subagent provider. ', packages: ['@dsh/subagent-codex'] },
  { key: 'The SDK provider runs each subagent as a complete DeepSeek H', packages: ['@dsh/subagent-sdk'] },
  { key: 'The fork provider creates an in-process child seeded with th', packages: ['@dsh/subagent'] },
  { key: 'The spawn provider creates a fresh child `Agent` in the curr', packages: ['@dsh/subagent'] },
  { key: 'The model-facing delegation tool over one configured `ctx.su', packages: ['@dsh/tool-subagent'] },
  { key: 'The optional, globally named `send_message`, `interrupt_agen', packages: ['@dsh/tool-subagent'] },
  { key: 'The optional child-scoped `report` tool is a thin adapter ov', packages: ['@dsh/tool-subagent'] },
  { key: 'Local Service Provider for the `@deepseek-ai/dsh-subprocess`', packages: ['@dsh/subprocess-local'] },
  { key: 'Owner-scoped persistent PTY seam. `TerminalSessionService` r', packages: ['@dsh/terminal'] },
  { key: 'Persistent shell backend for `ctx.terminals` over `ctx.subpr', packages: ['@dsh/terminal'] },
  { key: 'Six model-facing tools over `ctx.terminals`: `terminal_open`', packages: ['@dsh/tool-terminal'] },
  { key: 'A replay LLM plugin for keyless snapshot tests. It yields mo', packages: ['@dsh/llm-replay'] },
  { key: "The model-facing `todo_write` tool: the agent's whole task l", packages: ['@dsh/tool-todo'] },
  { key: 'Node-only Loader integration for generated Typert artifacts.', missing: 'typert loader integration' },
  { key: 'The model-facing web tool suite — `web_search` and `web_fetc', packages: ['@dsh/tool-web'] },
  { key: 'The **`WebRuntime`** (`ctx.web`) defines WHAT web access the', packages: ['@dsh/web'] },
  { key: 'An anonymous public HTTP(S) `WebFetchProvider` for the harne', packages: ['@dsh/web-fetch-http'] },
  { key: 'A DeepSeek-backed `WebSearchProvider` for the harness web ca', packages: ['@dsh/web-search-deepseek'] },
  { key: 'An Exa-backed `WebSearchProvider` for the harness web capabi', packages: ['@dsh/web-search-exa'] },
  { key: 'A Perplexity-backed `WebSearchProvider` for the harness web ', packages: ['@dsh/web-search-perplexity'] },
  { key: 'The model-facing `ralph` tool runs a fixed foreground workfl', packages: ['@dsh/tool-ralph'] },
  { key: 'The model-facing **`workflow` tool**: run a JavaScript orche', packages: ['@dsh/tool-workflow'] },
  { key: 'This package implements `WorkflowEngine` with one Node worke', packages: ['@dsh/workflow-worker-thread'] },
  { key: 'Workspace entity registry (`ctx.workspaceRegistry`) for the ', packages: ['@dsh/workspace'] },
  {
    key: 'Adds an Open in VS Code action to each workspace row in the ',
    packages: ['@dsh/open-in-editor', '@dsh/ui-open-in-editor'],
  },
  {
    key: 'Adds Codex-style @file mentions to the web composer and expa',
    packages: ['@dsh/file-reference', '@dsh/ui-input-trigger'],
  },
  {
    key: 'Runs recurring or one-shot coding tasks in fresh DSH agent s',
    packages: ['@dsh/schedule', '@dsh/ui-schedule'],
  },
  {
    key: 'Shows configurable browser desktop notifications when a DSH ',
    packages: ['@dsh/desktop-notifications', '@dsh/ui-notifications'],
  },
  { key: 'Renders interactive components, charts, forms, and panels fr', packages: ['@dsh/ui-fences'] },
  { key: 'A full-screen Claude Code-style terminal front door for DSH ', packages: ['@dsh/bundle-tui'] },
]

/** Names of every workspace package (packages/<family>/<name>, bundles/<name>). */
export function workspacePackages(root = ROOT) {
  const names = new Set()
  const read = (/** @type {string} */ dir) => {
    const file = join(dir, 'package.json')
    if (existsSync(file)) names.add(JSON.parse(readFileSync(file, 'utf8')).name)
  }
  for (const family of readdirSync(join(root, 'packages'), { withFileTypes: true })) {
    if (!family.isDirectory()) continue
    for (const pkg of readdirSync(join(root, 'packages', family.name), { withFileTypes: true }))
      if (pkg.isDirectory()) read(join(root, 'packages', family.name, pkg.name))
  }
  if (existsSync(join(root, 'bundles')))
    for (const b of readdirSync(join(root, 'bundles'), { withFileTypes: true }))
      if (b.isDirectory()) read(join(root, 'bundles', b.name))
  return names
}

/** The registry's paragraphs (the title line dropped), whitespace folded. */
export function paragraphs(text) {
  return text
    .split(/\n\s*\n/)
    .map((p) => p.replace(/\s+/g, ' ').trim())
    .filter(Boolean)
    .slice(1)
}

/**
 * @param {string} text the registry
 * @param {Set<string>} packages workspace package names
 * @param {Entry[]} map
 */
export function count(text, packages, map = MAP) {
  const problems = []
  const used = new Set()
  const rows = paragraphs(text).map((paragraph, i) => {
    const entry = map.find((e) => paragraph.startsWith(e.key))
    const title = paragraph.length > 90 ? `${paragraph.slice(0, 87)}...` : paragraph
    if (!entry) {
      problems.push(`paragraph ${i + 1} has no entry in the map: "${title}"`)
      return { index: i + 1, title, status: 'unmapped', packages: [] }
    }
    used.add(entry)
    if (entry.missing) return { index: i + 1, title, status: 'missing', name: entry.missing, packages: [] }
    const absent = (entry.packages ?? []).filter((p) => !packages.has(p))
    for (const p of absent) problems.push(`paragraph ${i + 1} names ${p}, which is not a workspace package`)
    const status = absent.length ? 'missing' : entry.partial ? 'partial' : 'built'
    return {
      index: i + 1,
      title,
      status,
      packages: entry.packages ?? [],
      ...(entry.partial ? { note: entry.partial } : {}),
    }
  })
  for (const e of map) if (!used.has(e)) problems.push(`map entry "${e.key}" matches no paragraph of the registry`)
  const n = (/** @type {string} */ s) => rows.filter((r) => r.status === s).length
  return {
    built: n('built'),
    partial: n('partial'),
    missing: n('missing'),
    total: rows.length,
    paragraphs: rows,
    problems,
  }
}

const MEANING = [
  'What "built" means here: a workspace package owns the paragraph and its main behaviour is there.',
  "It is not an audit of every sentence: the depth of each package is judged in its README's",
  '`## Known Limitations`, and `partial` marks only gaps that are known and large. An earlier, stricter',
  'hand count (issue 41) read 130 built, 24 partial, 23 missing; since then the agent spine, the',
  '`acp` profile, tool-cordis, the dynamic host runner, desktop notifications, `/open` and skill-badge were',
  'added, and several packages were finished by their owners; then the web gained skills in the `/` menu',
  '(ui-skill), a background-jobs view (ui-jobs), hot reload of browser halves (client-hmr), the',
  'model-written plugins panel (ui-cordis) and dsh-ui fences (ui-fences); then the browser half of',
  'model-written plugins (cordis-client-runner, in a sandboxed frame), the telemetry modes, browser',
  "notifications, the web sidebar's Open in editor and scheduled tasks in fresh sessions. PowerShell",
  '(`pwsh-local`, `pwsh-sandbox`, `tool-pwsh`) cannot be run or tested on these machines and stays out.',
  'The Typert loader integration has nothing to load into: the paragraph requires `ctx.typert`, a',
  "registry of generated Typert artifacts, and dsh's API gateway is written by hand, not generated.",
]

/** The docs/registry-status.md page. */
export function markdown(result) {
  const lines = [
    '# Registry status',
    '',
    'Every paragraph of the reference plugin registry (`../shared/reference/plugin-registry.txt`)',
    'against this workspace, as counted by `node scripts/registry-count.mjs` (regenerate this page with',
    '`node scripts/registry-count.mjs --markdown > docs/registry-status.md`).',
    '',
    `**${result.built} built, ${result.partial} partial, ${result.missing} missing, of ${result.total}.**`,
    '',
    ...MEANING,
    '',
    '## Missing',
    '',
    ...result.paragraphs
      .filter((r) => r.status === 'missing')
      .map((r) => `- ${r.index}. **${r.name ?? r.packages.join(', ')}**: ${r.title}`),
    '',
    '## Partial',
    '',
    ...(result.partial === 0
      ? ['None.']
      : result.paragraphs
          .filter((r) => r.status === 'partial')
          .map((r) => `- ${r.index}. ${r.packages.map((p) => `\`${p}\``).join(', ')}: ${r.note}`)),
    '',
    '## Built',
    '',
    '| # | packages | paragraph |',
    '| --- | --- | --- |',
    ...result.paragraphs
      .filter((r) => r.status === 'built')
      .map(
        (r) => `| ${r.index} | ${r.packages.map((p) => `\`${p}\``).join(', ')} | ${r.title.replace(/\|/g, '\\|')} |`,
      ),
    '',
  ]
  return lines.join('\n')
}

function registryFile(argv) {
  const i = argv.indexOf('--registry')
  if (i >= 0) return resolve(argv[i + 1] ?? '')
  const beside = resolve(ROOT, '..', 'shared', 'reference', 'plugin-registry.txt')
  return process.env.DSH_PLUGIN_REGISTRY ? resolve(process.env.DSH_PLUGIN_REGISTRY) : beside
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const argv = process.argv.slice(2)
  const file = registryFile(argv)
  let text
  try {
    text = readFileSync(file, 'utf8')
  } catch (error) {
    process.stderr.write(`registry-count: cannot read ${file}: ${/** @type {NodeJS.ErrnoException} */ (error).code}\n`)
    process.exit(2)
  }
  const result = count(text, workspacePackages())
  if (argv.includes('--json')) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`)
  else if (argv.includes('--markdown')) process.stdout.write(markdown(result))
  else {
    process.stdout.write(
      `registry: ${result.built}/${result.total} built, ${result.partial} partial, ${result.missing} missing\n`,
    )
    for (const r of result.paragraphs.filter((p) => p.status === 'missing'))
      process.stdout.write(`missing: ${r.index}. ${r.name ?? r.packages.join(', ')}\n`)
  }
  for (const p of result.problems) process.stderr.write(`registry-count: ${p}\n`)
  process.exit(result.problems.length ? 1 : 0)
}
