import { fileURLToPath } from 'node:url'
import { mountBackend, persistenceContract } from '@dsh/session-persistence/contract'
import JsonlPersistence from '../src/index.ts'

const module = fileURLToPath(new URL('../src/index.ts', import.meta.url))

persistenceContract(
  'jsonl (zstd)',
  mountBackend(JsonlPersistence, (root) => ({ root, batchWindowMs: 5 })),
  {
    child: { module, config: (root) => ({ root, batchWindowMs: 5 }) },
  },
)
persistenceContract(
  'jsonl (none)',
  mountBackend(JsonlPersistence, (root) => ({ root, compression: 'none', batchWindowMs: 5 })),
  {
    child: { module, config: (root) => ({ root, compression: 'none', batchWindowMs: 5 }) },
  },
)
