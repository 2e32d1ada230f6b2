// zstd for one batch frame: Node's zlib where it has zstd (22.15+ / 23.8+), else the bundled
// WebAssembly build of libzstd from @bokuweb/zstd-wasm (no download at install or run time).
import * as zlib from 'node:zlib'

export interface ZstdCodec {
  readonly name: 'node:zlib' | '@bokuweb/zstd-wasm'
  compress(input: Uint8Array, level: number): Uint8Array
  /** `size` is the exact decompressed size (stored in the batch header). */
  decompress(input: Uint8Array, size: number): Uint8Array
}

type NodeZstd = {
  zstdCompressSync(input: Uint8Array, options?: { params?: Record<number, number> }): Buffer
  zstdDecompressSync(input: Uint8Array, options?: { maxOutputLength?: number }): Buffer
  constants: Record<string, number>
}

let nodeCodec: ZstdCodec | undefined
let loading: Promise<ZstdCodec> | undefined
let wasmCodec: ZstdCodec | undefined

function zlibCodec(): ZstdCodec | undefined {
  const z = zlib as unknown as Partial<NodeZstd>
  if (typeof z.zstdCompressSync !== 'function' || typeof z.zstdDecompressSync !== 'function') return undefined
  const node = z as NodeZstd
  const levelParam = node.constants.ZSTD_c_compressionLevel!
  nodeCodec ??= {
    name: 'node:zlib',
    compress: (input, level) => node.zstdCompressSync(input, { params: { [levelParam]: level } }),
    decompress: (input, size) => node.zstdDecompressSync(input, { maxOutputLength: Math.max(size, 1) }),
  }
  return nodeCodec
}

/** The codec of this process, chosen once. `prefer: 'wasm'` forces the fallback (tests). */
export function loadZstd(prefer: 'auto' | 'wasm' = 'auto'): Promise<ZstdCodec> {
  const node = prefer === 'auto' ? zlibCodec() : undefined
  if (node) return Promise.resolve(node)
  loading ??= (async (): Promise<ZstdCodec> => {
    const wasm = await import('@bokuweb/zstd-wasm')
    await wasm.init()
    wasmCodec = {
      name: '@bokuweb/zstd-wasm',
      compress: (input, level) => wasm.compress(input, level),
      decompress: (input, size) => wasm.decompress(input, { defaultHeapSize: Math.max(size, 1) }),
    }
    return wasmCodec
  })()
  return loading
}

/**
 * The codec if it can be used right now (node:zlib always, the WebAssembly one once loaded), else
 * undefined, after starting its load unless `start` is false (a failed load is reported by the
 * next loadZstd).
 */
export function readyZstd(prefer: 'auto' | 'wasm' = 'auto', start = true): ZstdCodec | undefined {
  const ready = (prefer === 'auto' ? zlibCodec() : undefined) ?? wasmCodec
  if (ready || !start) return ready
  loadZstd(prefer).catch(() => {})
  return undefined
}
