// The envd wire schema (the `process.Process` and `filesystem.Filesystem` Connect services), read
// from the installed `e2b` SDK itself. The SDK embeds the serialized FileDescriptorProtos it was
// generated from but does not export them; taking them from its bundle means the stand-in serves
// exactly the messages the installed client encodes, so an SDK upgrade that changes the wire
// shows up here as a changed schema instead of a silent mismatch.
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { fileDesc } from '@bufbuild/protobuf/codegenv2'
import type { DescFile, DescService } from '@bufbuild/protobuf'
import { file_google_protobuf_timestamp } from '@bufbuild/protobuf/wkt'

export interface EnvdSchema {
  process: DescService
  filesystem: DescService
  files: DescFile[]
}

let cached: EnvdSchema | undefined

/** The envd services as the installed `e2b` SDK encodes them. Throws one sentence when the bundle's layout changed. */
export function envdSchema(): EnvdSchema {
  if (cached) return cached
  const require = createRequire(import.meta.url)
  const main = require.resolve('e2b')
  const bundle = readFileSync(main.replace(/index\.js$/, 'index.mjs'), 'utf8')
  const files: DescFile[] = []
  for (const match of bundle.matchAll(/fileDesc\d*\(\s*"([A-Za-z0-9+/=]+)"/g)) {
    files.push(fileDesc(match[1], [file_google_protobuf_timestamp]))
  }
  const service = (name: string): DescService => {
    for (const file of files) for (const s of file.services) if (s.typeName === name) return s
    throw new Error(
      `e2b-standin: the installed e2b SDK (${main}) embeds no ${name} descriptor; the stand-in cannot serve its wire`,
    )
  }
  cached = { process: service('process.Process'), filesystem: service('filesystem.Filesystem'), files }
  return cached
}
