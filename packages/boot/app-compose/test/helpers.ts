import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url))
/** The installation fallback used by the real cli. */
export const INSTALL_BASE = fileURLToPath(new URL('../../cli/package.json', import.meta.url))
export const TEMPLATES = fileURLToPath(new URL('../../../../profiles/', import.meta.url))

export function tempDir(prefix = 'dsh-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix))
}

export function write(file: string, text: string): string {
  mkdirSync(dirname(file), { recursive: true })
  writeFileSync(file, text)
  return file
}

export function writeProfile(home: string, name: string, bundles: string[], patch?: string): string {
  const dir = join(home, 'profiles', name)
  write(join(dir, 'package.json'), JSON.stringify({ name: `p-${name}`, dsh: { profile: { bundles } } }))
  if (patch !== undefined) write(join(dir, 'cordis.patch.yml'), patch)
  return dir
}
