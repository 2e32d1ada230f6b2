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

let loading: Promise<ZstdCodec> | undefined

/** The codec of this process, chosen once. `prefer: 'wasm'` forces the fallback (tests). */
export function loadZstd(prefer: 'auto' | 'wasm' = 'auto'): Promise<ZstdCodec> {
  const z = zlib as unknown as Partial<NodeZstd>
  if (prefer === 'auto' && typeof z.zstdCompressSync === 'function' && typeof z.zstdDecompressSync === 'function') {
    const node = z as NodeZstd
    const levelParam = node.constants.ZSTD_c_compressionLevel
    return Promise.resolve({
      name: 'node:zlib',
      compress: (input, level) => node.zstdCompressSync(input, { params: { [levelParam]: level } }),
      decompress: (input, size) => node.zstdDecompressSync(input, { maxOutputLength: Math.max(size, 1) }),
    })
  }
  loading ??= (async (): Promise<ZstdCodec> => {
    const wasm = await import('@bokuweb/zstd-wasm')
    await wasm.init()
    return {
      name: '@bokuweb/zstd-wasm',
      compress: (input, level) => wasm.compress(input, level),
      decompress: (input, size) => wasm.decompress(input, { defaultHeapSize: Math.max(size, 1) }),
    }
  })()
  return loading
}
