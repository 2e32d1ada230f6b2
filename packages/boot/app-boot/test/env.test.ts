import { describe, expect, it } from 'vitest'
import { join } from 'node:path'
import { applyDotEnv, DshUserError, readEnvFile } from '../src/index.ts'
import { tempDir, write } from './helpers.ts'

describe('.env layering', () => {
  it('inherited env beats the project .env, which beats $DSH_HOME/.env', () => {
    const cwd = tempDir()
    const home = tempDir()
    write(join(cwd, '.env'), 'A=project\nB=project\n# comment\nQ="quoted value"\n')
    write(join(home, '.env'), 'A=home\nB=home\nC=home\n')
    const env: NodeJS.ProcessEnv = { A: 'inherited' }
    const applied = applyDotEnv({ env, cwd, home })
    expect(env).toEqual({ A: 'inherited', B: 'project', C: 'home', Q: 'quoted value' })
    expect(applied).toEqual({ B: join(cwd, '.env'), Q: join(cwd, '.env'), C: join(home, '.env') })
  })

  it('ignores missing files and reports unreadable ones by name', () => {
    expect(applyDotEnv({ env: {}, cwd: tempDir(), home: tempDir() })).toEqual({})
    const dir = tempDir()
    write(join(dir, '.env', 'x'), '')
    expect(() => readEnvFile(join(dir, '.env'))).toThrow(DshUserError)
    expect(() => readEnvFile(join(dir, '.env'))).toThrow(`${join(dir, '.env')}: cannot read: EISDIR`)
  })
})
