// `dsh plugin new <name>`: a plugin package a stranger can publish, with a passing test that
// needs nothing but its two peer packages (node's own test runner, a real Cordis context).
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { PluginError } from './errors.ts'
import { defaultRowId } from './manifest.ts'
import { isPackageName } from './spec.ts'

/** The versions dsh itself runs; a plugin declares them as peers so it shares the host's copies. */
export const PEERS = { cordis: '4.0.0-rc.10', schemastery: '3.18.0' } as const

export interface ScaffoldResult {
  dir: string
  files: string[]
}

function files(name: string): Record<string, string> {
  const id = defaultRowId(name)
  const tool = `${id.replace(/[^A-Za-z0-9_]/g, '_')}_greet`
  const pkg = {
    name,
    version: '0.1.0',
    description: `A dsh plugin: the ${tool} tool`,
    type: 'module',
    main: './index.js',
    types: './index.d.ts',
    exports: { '.': { types: './index.d.ts', default: './index.js' } },
    files: ['index.js', 'index.d.ts', 'README.md'],
    keywords: ['dsh', 'dsh-plugin'],
    license: 'MIT',
    dsh: { plugin: { id, config: { greeting: 'hello' } } },
    scripts: { test: 'node --test' },
    peerDependencies: PEERS,
    devDependencies: PEERS,
  }
  return {
    'package.json': JSON.stringify(pkg, null, 2) + '\n',
    'index.js': `// ${name}: a dsh plugin. dsh mounts it as a row; every registration below is undone when it unloads.
import Schema from 'schemastery'

export const name = ${JSON.stringify(name)}
// Services this plugin needs; the row only becomes active once another row provides them.
export const inject = ['tools']
export const Config = Schema.object({
  greeting: Schema.string().default('hello').description('Word the tool greets with.'),
})

/** @param {import('cordis').Context} ctx @param {{ greeting: string }} config */
export function apply(ctx, config) {
  ctx.tools.register({
    name: ${JSON.stringify(tool)},
    description: 'Greets someone by name.',
    parameters: { type: 'object', properties: { who: { type: 'string' } }, required: ['who'] },
    execute: (args) => ({ content: \`\${config.greeting}, \${args.who}!\` }),
  })
}
`,
    'index.d.ts': `import type { Context } from 'cordis'
import type Schema from 'schemastery'
export declare const name: string
export declare const inject: string[]
export declare const Config: Schema<{ greeting?: string }, { greeting: string }>
export declare function apply(ctx: Context, config: { greeting: string }): void
`,
    'test/plugin.test.js': `// Mounts the plugin into a real Cordis context beside a small stand-in for dsh's tool registry.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Context } from 'cordis'
import * as plugin from '../index.js'

function withTools() {
  const ctx = new Context()
  const tools = new Map()
  ctx.provide('tools')
  ctx.set('tools', {
    register(tool) {
      tools.set(tool.name, tool)
      return () => tools.delete(tool.name)
    },
  })
  return { ctx, tools }
}

test('registers ${tool}, which greets with the configured word', async () => {
  const { ctx, tools } = withTools()
  const fiber = ctx.plugin(plugin, { greeting: 'hi' })
  await fiber
  const result = await tools.get(${JSON.stringify(tool)}).execute({ who: 'Ada' })
  assert.deepEqual(result, { content: 'hi, Ada!' })
  await fiber.dispose()
})

test('rejects a config of the wrong type', async () => {
  const { ctx } = withTools()
  await assert.rejects(() => ctx.plugin(plugin, { greeting: 42 }).await(), /greeting/)
})
`,
    'README.md': `# ${name}

A dsh plugin that offers the model one tool, \`${tool}\`.

## Install

\`\`\`sh
dsh plugin add ${name} --profile headless     # from the registry, once published
dsh plugin add ./ --profile headless           # from this directory
\`\`\`

\`dsh plugin add\` writes this row into the profile's \`cordis.patch.yml\` (from \`dsh.plugin\` in package.json):

\`\`\`yaml
- insert:
    - id: ${id}
      name: ${name}
      config: { greeting: hello }
\`\`\`

## Develop

\`\`\`sh
npm install      # cordis and schemastery, for the test
npm test
npm pack         # ${name.replace(/^@/, '').replace('/', '-')}-0.1.0.tgz, installable with dsh plugin add
\`\`\`
`,
  }
}

/** Writes the package into `<cwd>/<name without scope>`; refuses to overwrite an existing directory. */
export function scaffold(name: string, cwd: string, into?: string): ScaffoldResult {
  if (!isPackageName(name))
    throw new PluginError(
      `${JSON.stringify(name)} is not a valid npm package name (lowercase, e.g. dsh-plugin-hello or @me/dsh-plugin-hello)`,
      2,
    )
  const dir = resolve(cwd, into ?? name.replace(/^@[^/]+\//, ''))
  if (existsSync(dir)) throw new PluginError(`${dir} already exists; pick another name or directory`, 2)
  const out = files(name)
  for (const [rel, text] of Object.entries(out)) {
    const path = join(dir, rel)
    mkdirSync(join(path, '..'), { recursive: true })
    writeFileSync(path, text)
  }
  return { dir, files: Object.keys(out) }
}
