import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { mountBackend, persistenceContract } from '@dsh/session-persistence/contract'
import SqlitePersistence from '../src/index.ts'

const module = fileURLToPath(new URL('../src/index.ts', import.meta.url))
const config = (root: string) => ({ path: join(root, 'sessions.sqlite'), batchWindowMs: 5 })

persistenceContract('sqlite', mountBackend(SqlitePersistence, config), { child: { module, config } })
