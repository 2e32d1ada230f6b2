// A real Cordis Loader over real module files in a temp dir (as in @dsh/plugin-inventory's tests).
import type { Context } from 'cordis'
import { Group, Loader, type EntryOptions } from '@cordisjs/plugin-loader'
import { settleEntryFibers } from '@dsh/cordis-compat/loader'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

class TestLoader extends Loader {
  write(): void {}
  override import(name: string, getOuterStack: () => string[], useInternal?: boolean): Promise<unknown> {
    if (name.startsWith('cordis:')) return super.import(name, getOuterStack, useInternal)
    return import(name)
  }
}

/** Writes `<root>/node_modules/<pkg>/{package.json,index.js}` and returns the index file URL. */
export function writePackage(
  root: string,
  pkg: string,
  source: string,
  extra: Record<string, unknown> = {},
  files: Record<string, string> = {},
): string {
  const dir = join(root, 'node_modules', pkg)
  mkdirSync(dir, { recursive: true })
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(join(dir, file, '..'), { recursive: true })
    writeFileSync(join(dir, file), text)
  }
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: pkg, type: 'module', ...extra }))
  writeFileSync(join(dir, 'index.js'), source)
  return pathToFileURL(join(dir, 'index.js')).href
}

export async function bootLoader(ctx: Context, rows: Partial<EntryOptions>[]): Promise<Loader> {
  // Failed row fibers would surface as unhandled rejections through the Loader's own `.finally()`;
  // the inventory reports them, so their await() resolves here (as the dsh boot does).
  settleEntryFibers(ctx)
  ;(ctx.on as (name: string, listener: () => void) => void)('internal/error', () => {})
  let loader!: Loader
  await ctx.plugin({
    name: 'test-app',
    apply(c: Context) {
      loader = new TestLoader(c, {})
      loader.builtins.group = Group
    },
  })
  await loader.root.update(rows as EntryOptions[])
  await loader.await()
  return loader
}
