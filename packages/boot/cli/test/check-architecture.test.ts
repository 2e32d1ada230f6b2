// The architecture gate (scripts/check-architecture.mjs with the repository's .dependency-cruiser.cjs),
// run as a subprocess on small workspace trees in a temp dir: one clean tree, then the same tree
// with one bad arrow per rule, each in a file of its own. Workspace packages resolve the way they do in the repository, by
// name through node_modules/@dsh/<name> links and the package's `development` export.
import { describe, expect, it } from 'vitest'
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const SCRIPT = fileURLToPath(new URL('../../../../scripts/check-architecture.mjs', import.meta.url))

function run(...args: string[]) {
  return spawnSync(process.execPath, [SCRIPT, ...args], { encoding: 'utf8' })
}

/** A Cordis private field, spelled so that this file does not itself name one (the check reads tests too). */
const PRIVATE_FIELD = ['', 'error'].join('_')

/** The packages of the clean tree, by directory: [package name, files (path -> source)]. */
const CLEAN: Record<string, [string, Record<string, string>]> = {
  'packages/util/brand': ['@dsh/brand', { 'src/index.ts': "export const brand = 'dsh'\n" }],
  'packages/llm/llm': [
    '@dsh/llm',
    { 'src/index.ts': "import { brand } from '@dsh/brand'\nexport const llm = brand\n" },
  ],
  'packages/llm/llm-deepseek': [
    '@dsh/llm-deepseek',
    { 'src/index.ts': "import { llm } from '@dsh/llm'\nexport const adapter = llm\n" },
  ],
  'packages/core/session': [
    '@dsh/session',
    { 'src/index.ts': "import type { llm } from '@dsh/llm'\nexport type Event = typeof llm\n" },
  ],
  'packages/shell/tool-bash': [
    '@dsh/tool-bash',
    {
      'src/index.ts': "import type { Event } from '@dsh/session'\nexport type E = Event\n",
      'test/helper.ts': 'export const h = 1\n',
      'test/a.test.ts': "import { h } from './helper.ts'\nexport const a = h\n",
    },
  ],
  'packages/api/web-protocol': ['@dsh/web-protocol', { 'src/index.ts': 'export const wire = 1\n' }],
  // the one package that may read Cordis' private fields; the browser may import its main entry
  'packages/util/cordis-compat': [
    '@dsh/cordis-compat',
    {
      'src/index.ts': 'export const fiberError = (fiber: unknown) => fiber\n',
      'src/loader.ts':
        "import { readFileSync } from 'node:fs'\nexport const initTask = (e: unknown) => [e, readFileSync]\n",
    },
  ],
  'packages/client/runtime': [
    '@dsh/client-runtime',
    {
      'src/index.ts':
        "import { wire } from '@dsh/web-protocol'\nimport { fiberError } from '@dsh/cordis-compat'\nexport const runtime = [wire, fiberError]\n",
    },
  ],
  'packages/client/ui-goal': [
    '@dsh/ui-goal',
    {
      'src/index.ts':
        "import { readFileSync } from 'node:fs'\nimport { contract } from './contract.ts'\nexport const host = [readFileSync, contract]\n",
      'src/contract.ts': "import { wire } from '@dsh/web-protocol'\nexport const contract = wire\n",
      'src/client/index.ts':
        "import { runtime } from '@dsh/client-runtime'\nimport { contract } from '../contract.ts'\nexport const half = [runtime, contract]\n",
    },
  ],
  'bundles/headless': ['@dsh/bundle-headless', { 'src/help.ts': "export const HELP = 'usage'\n" }],
  'packages/fs/fs-local': ['@dsh/fs-local', { 'src/index.ts': 'export const local = 1\n' }],
  // the one known exception of the config: api-models imports an LLM provider
  'packages/api/api-models': [
    '@dsh/api-models',
    { 'src/index.ts': "import { adapter } from '@dsh/llm-deepseek'\nexport const models = adapter\n" },
  ],
}

/** Writes the clean tree plus `extra` files (path -> source, over the clean ones) and links every package. */
function tree(extra: Record<string, string> = {}): string {
  const root = mkdtempSync(join(tmpdir(), 'dsh-arch-'))
  const files: Record<string, string> = {}
  for (const [dir, [name, sources]] of Object.entries(CLEAN)) {
    const exports = {
      '.': { development: './src/index.ts' },
      './client': { development: './src/client/index.ts' },
      './contract': { development: './src/contract.ts' },
      './help': { development: './src/help.ts' },
      './loader': { development: './src/loader.ts' },
    }
    files[`${dir}/package.json`] = JSON.stringify({ name, type: 'module', exports })
    for (const [path, source] of Object.entries(sources)) files[`${dir}/${path}`] = source
    mkdirSync(join(root, 'node_modules', '@dsh'), { recursive: true })
    symlinkSync(join(root, dir), join(root, 'node_modules', name))
  }
  for (const [path, source] of Object.entries({ ...files, ...extra })) {
    mkdirSync(dirname(join(root, path)), { recursive: true })
    writeFileSync(join(root, path), source)
  }
  return root
}

function check(extra: Record<string, string> = {}) {
  const root = tree(extra)
  try {
    return run('--root', root)
  } finally {
    rmSync(root, { recursive: true, force: true })
  }
}

describe('check-architecture', () => {
  it('passes a tree whose arrows all point down', () => {
    const result = check()
    expect(result.stderr).toBe('')
    expect(result.status).toBe(0)
    expect(result.stdout).toMatch(/no violation, 1 known exception/)
    // A known exception is listed on every run, by name.
    expect(result.stdout.split('\n')).toContain(
      'known exception exception-api-models-imports-llm-providers: packages/api/api-models/src/index.ts -> packages/llm/llm-deepseek/src/index.ts',
    )
  })

  // One tree holding one bad arrow per rule, each in its own file; every line must be reported.
  const BAD: Array<[string, Record<string, string>, string]> = [
    [
      'a definition imports a provider',
      {
        'packages/core/session/src/index.ts': "import { adapter } from '@dsh/llm-deepseek'\nexport const e = adapter\n",
      },
      'definitions-import-only-definitions: packages/core/session/src/index.ts -> packages/llm/llm-deepseek/src/index.ts',
    ],
    [
      'a definition imports a consumer by a type-only import',
      {
        'packages/llm/llm/src/index.ts':
          "import type { E } from '@dsh/tool-bash'\nexport type L = E\nexport const llm = 1\n",
      },
      'definitions-import-only-definitions: packages/llm/llm/src/index.ts -> packages/shell/tool-bash/src/index.ts',
    ],
    [
      'a consumer imports a provider',
      {
        'packages/shell/tool-bash/src/run.ts':
          "import { adapter } from '@dsh/llm-deepseek'\nexport const t = adapter\n",
      },
      'consumer-never-imports-provider: packages/shell/tool-bash/src/run.ts -> packages/llm/llm-deepseek/src/index.ts',
    ],
    [
      'an llm-family package imports the core',
      {
        'packages/llm/llm-deepseek/src/index.ts':
          "import type { Event } from '@dsh/session'\nexport type A = Event\nexport const adapter = 1\n",
      },
      'llm-floor-below-core: packages/llm/llm-deepseek/src/index.ts -> packages/core/session/src/index.ts',
    ],
    [
      'util imports a package above it',
      {
        'packages/util/brand/src/index.ts':
          "import type { Event } from '@dsh/session'\nexport type B = Event\nexport const brand = 'dsh'\n",
      },
      'util-is-the-ground-floor: packages/util/brand/src/index.ts -> packages/core/session/src/index.ts',
    ],
    [
      'a package bin imports a bundle',
      {
        'packages/shell/tool-bash/bin/t.mjs':
          "const { HELP } = await import('@dsh/bundle-headless/help')\nconsole.log(HELP)\n",
      },
      'no-package-imports-a-bundle: packages/shell/tool-bash/bin/t.mjs -> bundles/headless/src/help.ts',
    ],
    [
      'a browser half imports its host half',
      { 'packages/client/ui-goal/src/client/a.ts': "import { host } from '../index.ts'\nexport const half = host\n" },
      'browser-imports-no-host-entry: packages/client/ui-goal/src/client/a.ts -> packages/client/ui-goal/src/index.ts',
    ],
    [
      'a browser half imports a server package',
      {
        'packages/client/ui-goal/src/client/b.ts': "import type { Event } from '@dsh/session'\nexport type H = Event\n",
      },
      'browser-imports-only-client-contract-and-runtime: packages/client/ui-goal/src/client/b.ts -> packages/core/session/src/index.ts',
    ],
    [
      'a browser half imports a Node builtin',
      { 'packages/client/ui-goal/src/client/c.ts': "import { join } from 'node:path'\nexport const half = join\n" },
      'browser-imports-no-node-builtins: packages/client/ui-goal/src/client/c.ts -> path',
    ],
    [
      'a contract imports a Node builtin',
      { 'packages/client/ui-goal/src/contract.ts': "import { join } from 'node:path'\nexport const contract = join\n" },
      'contract-has-no-node-imports: packages/client/ui-goal/src/contract.ts -> path',
    ],
    [
      'the excepted file imports a provider its exception does not name',
      { 'packages/api/api-models/src/fs.ts': "import { local } from '@dsh/fs-local'\nexport const f = local\n" },
      'consumer-never-imports-provider: packages/api/api-models/src/fs.ts -> packages/fs/fs-local/src/index.ts',
    ],
    [
      "a test imports another package's test helper by a relative path",
      {
        'packages/llm/llm-deepseek/test/a.test.ts':
          "import { h } from '../../../shell/tool-bash/test/helper.ts'\nexport const a = h\n",
      },
      'no-relative-import-into-another-package: packages/llm/llm-deepseek/test/a.test.ts -> packages/shell/tool-bash/test/helper.ts',
    ],
    [
      "a source file imports another package's src by a relative path",
      {
        'packages/shell/tool-bash/src/wire.ts':
          "import { wire } from '../../../api/web-protocol/src/index.ts'\nexport const t = wire\n",
      },
      'no-relative-import-into-another-package: packages/shell/tool-bash/src/wire.ts -> packages/api/web-protocol/src/index.ts',
    ],
    [
      'a package outside cordis-compat reads a Cordis private field',
      {
        'packages/shell/tool-bash/src/fiber.ts': `export const failed = (f: Record<string, unknown>) => f.${PRIVATE_FIELD}\n`,
      },
      'cordis-internals-only-in-compat: packages/shell/tool-bash/src/fiber.ts:1 -> _error',
    ],
    [
      "cordis-compat's browser-safe entry imports a Node builtin",
      {
        'packages/util/cordis-compat/src/index.ts':
          "import { join } from 'node:path'\nexport const fiberError = (fiber: unknown) => [fiber, join]\n",
      },
      'cordis-compat-entry-has-no-node-builtins: packages/util/cordis-compat/src/index.ts -> path',
    ],
    [
      "browser code imports cordis-compat's Node-only loader entry",
      {
        'packages/client/runtime/src/loader.ts':
          "import { initTask } from '@dsh/cordis-compat/loader'\nexport const t = initTask\n",
      },
      'browser-imports-only-client-contract-and-runtime: packages/client/runtime/src/loader.ts -> packages/util/cordis-compat/src/loader.ts',
    ],
  ]
  let bad: ReturnType<typeof run> | undefined
  const badRun = () => (bad ??= check(Object.assign({}, ...BAD.map(([, extra]) => extra))))

  it.each(BAD)('fails when %s', (_what, _extra, line) => {
    const result = badRun()
    expect(result.status).toBe(1)
    expect(result.stderr.split('\n')).toContain(line)
    expect(result.stderr).toMatch(/check-architecture: \d+ violation\(s\) in \d+ modules/)
  })

  it('rejects unknown arguments and a root without packages in one line, exit 2', () => {
    const bad = run('--nope')
    expect(bad.status).toBe(2)
    expect(bad.stderr).toBe(
      'check-architecture: unknown or incomplete argument "--nope" (usage: check-architecture.mjs [--root DIR] [--config FILE])\n',
    )
    const empty = mkdtempSync(join(tmpdir(), 'dsh-arch-empty-'))
    try {
      const none = run('--root', empty)
      expect(none.status).toBe(2)
      expect(none.stderr).toBe(`check-architecture: ${empty} holds none of packages, bundles, examples\n`)
    } finally {
      rmSync(empty, { recursive: true, force: true })
    }
  })
})
