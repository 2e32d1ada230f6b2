// bootComposition with prelinked early rows: the early rows apply (their fibers settle) before the
// other prelinked files are even evaluated, then the rest of the tree mounts.
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterEach, expect, it } from 'vitest'
import { bootComposition, composeLayers, parseLayer, type BootedTree } from '../src/index.ts'
import { INSTALL_BASE } from './helpers.ts'

const cleanup: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step()
})

it('applies the early rows before the other prelinked files are evaluated', async () => {
  const root = mkdtempSync(join(tmpdir(), 'dsh-boot-early-'))
  cleanup.push(() => rmSync(root, { recursive: true, force: true }))
  const order: string[] = []
  const global = globalThis as Record<string, unknown>
  global.__dshBootOrder = order
  cleanup.push(() => void delete global.__dshBootOrder)

  mkdirSync(join(root, 'pkg/dist'), { recursive: true })
  const earlyFile = join(root, 'pkg/dist/early.js')
  const lateFile = join(root, 'pkg/dist/late.js')
  // The early row's apply takes a while: a boot that did not wait for it would evaluate the late
  // file in the meantime.
  writeFileSync(
    earlyFile,
    `export const name = 'early-row'\nexport async function apply() {\n  await new Promise((resolve) => setTimeout(resolve, 150))\n  globalThis.__dshBootOrder.push('early applied')\n}\n`,
  )
  writeFileSync(
    lateFile,
    `export const name = 'late-row'\nexport function apply() {\n  globalThis.__dshBootOrder.push('late applied')\n}\n`,
  )
  const earlyUrl = pathToFileURL(earlyFile).href
  const lateUrl = pathToFileURL(lateFile).href

  const dir = join(root, 'prelinked/dsh')
  mkdirSync(dir, { recursive: true })
  writeFileSync(
    join(dir, 'bundles-base.early.mjs'),
    `import * as ns from ${JSON.stringify(earlyUrl)}\nexport const modules = { ${JSON.stringify(earlyUrl)}: ns }\n`,
  )
  writeFileSync(
    join(dir, 'bundles-base.mjs'),
    `import * as ns from ${JSON.stringify(lateUrl)}\nglobalThis.__dshBootOrder.push('late file evaluated')\nexport const modules = { ${JSON.stringify(lateUrl)}: ns }\n`,
  )
  const input = (file: string, rel: string) => {
    const st = statSync(file)
    return [rel, st.size, st.mtimeMs]
  }
  writeFileSync(
    join(dir, 'manifest.json'),
    JSON.stringify({
      variant: 'dsh',
      layers: { 'bundles-base': { modules: [lateUrl] }, 'bundles-base.early': { modules: [earlyUrl], early: true } },
      inputs: [input(earlyFile, 'pkg/dist/early.js'), input(lateFile, 'pkg/dist/late.js')],
    }),
  )

  const layerFile = join(root, 'layer.yml')
  const text = `- insert:\n    - id: early\n      name: ${earlyUrl}\n    - id: late\n      name: ${lateUrl}\n`
  const comp = composeLayers([parseLayer(text, layerFile, 'early test layer')], INSTALL_BASE, root)
  const tree: BootedTree = await bootComposition(comp, { prelink: 'dsh', prelinkRoot: root, debug: true })
  cleanup.push(() => tree.dispose())
  expect(order).toEqual(['early applied', 'late file evaluated', 'late applied'])
})
