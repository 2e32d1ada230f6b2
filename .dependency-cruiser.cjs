// The floors of the architecture (ARCHITECTURE.md sections 1, 2 and 5a: layout, seams, faces) as
// dependency-cruiser rules, checked by `pnpm arch` (scripts/check-architecture.mjs) and in .ci/run.
// Paths are relative to the repository root. Floors, bottom up:
//
//   util           packages/util/*: leaf helpers (brand, home-paths, atomic-write, plain-service, stdout-claim)
//   definitions    the vocabulary of the core (session, agent, tools, system-prompt, scope) and each
//                  seam's Service Definition (packages/<family>/<family>, e.g. fs/fs, llm/llm), plus
//                  the wire contracts (web-protocol, sdk-protocol)
//   providers      implementations of a seam (fs-local, llm-deepseek, session-persistence-jsonl...)
//   consumers      tools, commands, policies and features that use the seams
//   surfaces       host halves, API gateway, client, ACP, SDK, TUI, boot (the definitions rule
//                  keeps every surface above the definitions)
//   bundles        bundles/*: composition, imported by nothing under packages/
//
// The floor rules hold for shipped code (src/ and bin/ of a package or bundle); tests may compose
// any floors through package names, but never reach into another package's files by a relative path.
// An exception is a named rule entry with the reason beside it, never a blanket disable.

/**
 * The core vocabulary and the seams' definition packages (Service Definition role): abstract
 * services, their types and events. Listed by name (not "every packages/<f>/<f>"): acp/acp is a
 * surface, and subagent/subagent, terminal/terminal and schedule/schedule run processes and policies
 * of their own, so they sit on the consumer floor.
 */
const DEFINITION_FAMILIES = [
  'attachment',
  'code-runtime',
  'compaction',
  'credentials',
  'fs',
  'goal',
  'jobs',
  'llm',
  'lsp',
  'sandbox',
  'settings',
  'shell',
  'skill',
  'spill',
  'storage',
  'subprocess',
  'web',
  'workflow',
  'workspace',
]
const DEFINITIONS = [
  '^packages/core/(session|agent|tools|system-prompt|scope)/',
  `^packages/(${DEFINITION_FAMILIES.join('|')})/(${DEFINITION_FAMILIES.join('|')})/`,
  '^packages/session/session-persistence/',
  '^packages/session-query/session-query/',
  // the spill seam's file primitives (private directories, no-follow opens), used by every seam that spills
  '^packages/spill/spill-files/',
  // the wire contracts: the browser's and the SDK's
  '^packages/api/web-protocol/',
  '^packages/sdk/protocol/',
]

/**
 * Wire contract subpaths (`./contract`): runtime schemas shared by a host half and its browser half.
 * session-persistence's `./contract` is its backends' conformance test suite, not a wire contract.
 */
const CONTRACTS = '^packages/(?!session/session-persistence/)[^/]+/[^/]+/src/contract\\.tsx?$'

/** Implementations of a seam (Service Provider role). A consumer never imports one. */
const PROVIDERS = [
  '^packages/[^/]+/[^/]+-(local|sandbox|sqlite|jsonl|json|otel|stdio|worker-thread|subprocess)/',
  '^packages/llm/llm-(deepseek|pi-ai)/',
  '^packages/web/(web-fetch-http|web-search-[^/]+)/',
  '^packages/subagent/subagent-(acp|claude-code|codex|sdk)/',
  '^packages/skill/skill-filesystem/',
  // ACP's `ctx.fs` provider: the sandboxed local filesystem, routed through the editor when it offers fs
  '^packages/acp/acp/src/client-fs\\.ts$',
]

/**
 * Known exceptions: arrows the rules forbid that could not be removed yet, each named, with its
 * reason and the issue that tracks it. The check prints them on every run (severity info) without
 * failing; anything else from the same file still fails.
 */
const EXCEPTIONS = [
  {
    name: 'exception-api-models-imports-llm-providers',
    comment:
      "api-models (the web UI's model settings) declares @dsh/llm-pi-ai routes at run time (RouteConfig, " +
      'checkRoutes, buildRoute, PiAiAdapter) and reads the DeepSeek default route and base URL. The fix ' +
      'is for each provider to own its settings endpoints (a host half of llm-pi-ai / llm-deepseek, or a ' +
      'route-declaration method on ctx.llm), a refactor of the model settings API; issue #44.',
    from: '^packages/api/api-models/src/',
    to: '^packages/llm/llm-(deepseek|pi-ai)/',
    rule: 'consumer-never-imports-provider',
  },
]

/** Who may import a provider: other providers (one may wrap another), boot glue and test-support. */
const MAY_IMPORT_PROVIDERS = [...PROVIDERS, '^packages/boot/', '^packages/test-support/', '^bundles/']

/** Shipped code of a package or bundle (what the floors constrain). */
const SHIPPED = '^(packages/[^/]+/[^/]+|bundles/[^/]+)/(src|bin)/'

/**
 * Browser code: the client runtime, the app (all but its node-side src/index.ts), the shared
 * browser libraries of the client family, and every feature's browser half (src/client/).
 * The host entry of a ui-* package (src/index.ts), and of client-hmr and cordis-client-runner, is its host half.
 */
const BROWSER = '^packages/client/[^/]+/src/'
const CLIENT_HOST_ENTRIES =
  '^packages/client/(ui-(?!markdown/)[^/]+|web|client-hmr|cordis-client-runner)/src/index\\.tsx?$'

/**
 * @dsh/cordis-compat's browser-safe entry (it imports `cordis` only): the client runtime reads a
 * fiber's state through it. Its `./loader` entry (src/loader.ts) is Node-only and stays out.
 */
const CORDIS_COMPAT_BROWSER = '^packages/util/cordis-compat/src/index\\.ts$'

/** What browser code may import from the workspace: browser code, the wire contract, contract subpaths, cordis-compat's entry. */
const BROWSER_MAY_IMPORT = [BROWSER, '^packages/api/web-protocol/src/', CONTRACTS, CORDIS_COMPAT_BROWSER]

module.exports = {
  forbidden: [
    {
      name: 'util-is-the-ground-floor',
      comment: 'packages/util/* are leaf helpers: they import no other workspace package but util.',
      severity: 'error',
      from: { path: '^packages/util/' },
      to: { path: '^(packages|bundles)/', pathNot: '^packages/util/' },
    },
    {
      name: 'definitions-import-only-definitions',
      comment:
        'A Service Definition or core vocabulary package imports only other definitions and util: ' +
        'never a provider, a consumer, a surface or a bundle (ARCHITECTURE.md section 2).',
      severity: 'error',
      from: { path: DEFINITIONS.map((p) => `${p}(src|bin)/`) },
      to: { path: '^(packages|bundles)/', pathNot: [...DEFINITIONS, '^packages/util/'] },
    },
    {
      name: 'llm-floor-below-core',
      comment:
        'The core vocabulary (session, agent, tools...) is built on @dsh/llm, so nothing filed in the ' +
        'llm family may import the core: a package that needs the agent or the session log is a ' +
        'consumer of those seams and lives on their floor (e.g. llm-retry in core, token-meter in session).',
      severity: 'error',
      from: { path: '^packages/llm/[^/]+/(src|bin)/' },
      to: { path: '^packages/core/' },
    },
    {
      name: 'contract-has-no-node-imports',
      comment: 'The wire contract and every contract subpath load in the browser: no Node builtins.',
      severity: 'error',
      from: { path: ['^packages/api/web-protocol/src/', CONTRACTS] },
      to: { dependencyTypes: ['core'] },
    },
    {
      name: 'cordis-compat-entry-is-browser-safe',
      comment:
        "@dsh/cordis-compat's main entry is imported by the client runtime: no Node builtin, and not " +
        'the plugin loader (which imports node:module); Loader internals go in its ./loader entry. ' +
        'scripts/check-architecture.mjs also fails any file outside that package that names a Cordis ' +
        'private field (cordis-internals-only-in-compat).',
      severity: 'error',
      from: { path: CORDIS_COMPAT_BROWSER },
      to: { path: ['plugin-loader', '^packages/util/cordis-compat/src/loader\\.ts$'] },
    },
    {
      name: 'cordis-compat-entry-has-no-node-builtins',
      comment: 'As above: the browser-safe entry of @dsh/cordis-compat imports no Node builtin.',
      severity: 'error',
      from: { path: CORDIS_COMPAT_BROWSER },
      to: { dependencyTypes: ['core'] },
    },
    {
      name: 'consumer-never-imports-provider',
      comment:
        'Only another provider, boot glue, test-support or a bundle may import a provider; everyone ' +
        'else reaches the seam through its definition (ctx.<service>).',
      severity: 'error',
      from: { path: SHIPPED, pathNot: [...MAY_IMPORT_PROVIDERS, ...EXCEPTIONS.map((e) => e.from)] },
      to: { path: PROVIDERS },
    },
    // The excepted files are still held to the rule for every other provider.
    ...EXCEPTIONS.map((e) => ({
      name: e.rule,
      comment: `As above, for ${e.from} apart from its known exception (${e.name}).`,
      severity: 'error',
      from: { path: e.from },
      to: { path: PROVIDERS, pathNot: e.to },
    })),
    ...EXCEPTIONS.map((e) => ({
      name: e.name,
      comment: e.comment,
      severity: 'info',
      from: { path: e.from },
      to: { path: e.to },
    })),
    {
      name: 'no-package-imports-a-bundle',
      comment: 'Bundles compose packages; no package (the launcher included) imports a bundle.',
      severity: 'error',
      from: { path: '^packages/[^/]+/[^/]+/(src|bin)/' },
      to: { path: '^bundles/' },
    },
    {
      name: 'browser-imports-only-client-contract-and-runtime',
      comment:
        'Browser code imports only browser code (the client runtime, browser halves, shared client ' +
        'modules), the wire contract (web-protocol) and contract subpaths: never a host half.',
      severity: 'error',
      from: { path: BROWSER, pathNot: CLIENT_HOST_ENTRIES },
      to: { path: '^(packages|bundles)/', pathNot: BROWSER_MAY_IMPORT },
    },
    {
      name: 'browser-imports-no-host-entry',
      comment: "A browser half never imports a ui-* package's host half (its src/index.ts).",
      severity: 'error',
      from: { path: BROWSER, pathNot: CLIENT_HOST_ENTRIES },
      to: { path: CLIENT_HOST_ENTRIES },
    },
    {
      name: 'browser-imports-no-node-builtins',
      comment: 'Browser code runs in a page: no Node builtins.',
      severity: 'error',
      from: { path: BROWSER, pathNot: CLIENT_HOST_ENTRIES },
      to: { dependencyTypes: ['core'] },
    },
    {
      name: 'no-relative-import-into-another-package',
      comment:
        'A file reaches another package only by its name and public exports, never by a relative path ' +
        'into its src/ or test/ (export the helper, or move it to a test-support package).',
      severity: 'error',
      from: { path: '^(packages/[^/]+/[^/]+|bundles/[^/]+|examples/[^/]+)/' },
      to: {
        dependencyTypes: ['local'],
        path: '^(packages/[^/]+/[^/]+|bundles/[^/]+|examples/[^/]+)/',
        pathNot: '^$1/',
      },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(node_modules|dist|dist-client|dist-web|fixtures)/' },
    // Type-only imports count: a type import is still an arrow between floors.
    tsPreCompilationDeps: true,
    // Resolve workspace packages the way vitest and tsx do: through package.json `exports` under the
    // `development` condition (src/), following pnpm's symlinks to the real package directory.
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['development', 'import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.tsx', '.mts', '.js', '.mjs', '.cjs', '.json'],
      mainFields: ['module', 'main', 'types'],
    },
    skipAnalysisNotInRules: true,
  },
}
