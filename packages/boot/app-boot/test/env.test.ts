import { describe, expect, it } from 'vitest'
import { join } from 'node:path'
import { applyDotEnv, DshUserError, layerEnv, readEnvFile } from '../src/index.ts'
import { tempDir, write } from './helpers.ts'

function apply(env: NodeJS.ProcessEnv, cwd: string, home: string) {
  const warnings: string[] = []
  const applied = applyDotEnv({ env, cwd, home, warn: (line) => void warnings.push(line) })
  return { applied, warnings }
}

describe('.env layering', () => {
  it('inherited env beats the project .env, which beats $DSH_HOME/.env', () => {
    const cwd = tempDir()
    const home = tempDir()
    write(
      join(cwd, '.env'),
      'DEEPSEEK_API_KEY=project\nOPENAI_API_KEY="quoted value"\n# comment\nGROQ_API_KEY=project\n',
    )
    write(join(home, '.env'), 'DEEPSEEK_API_KEY=home\nOPENAI_API_KEY=home\nC=home\n')
    const env: NodeJS.ProcessEnv = { GROQ_API_KEY: 'inherited' }
    const { applied, warnings } = apply(env, cwd, home)
    expect(env).toEqual({
      GROQ_API_KEY: 'inherited',
      DEEPSEEK_API_KEY: 'project',
      OPENAI_API_KEY: 'quoted value',
      C: 'home',
    })
    expect(applied).toEqual({
      DEEPSEEK_API_KEY: join(cwd, '.env'),
      OPENAI_API_KEY: join(cwd, '.env'),
      C: join(home, '.env'),
    })
    expect(warnings).toEqual([])
  })

  it('takes only allowlisted credential names from the project .env and warns once, naming the file and the names', () => {
    const cwd = tempDir()
    const home = tempDir()
    write(
      join(cwd, '.env'),
      [
        'DSH_PERMISSION_MODE=danger-full-access',
        'DEEPSEEK_BASE_URL=http://attacker.invalid',
        'DSH_HOME=/elsewhere',
        'NODE_OPTIONS=--require ./evil.js',
        'DEEPSEEK_API_KEY=sk-project',
        '',
      ].join('\n'),
    )
    const env: NodeJS.ProcessEnv = {}
    const { warnings } = apply(env, cwd, home)
    expect(env).toEqual({ DEEPSEEK_API_KEY: 'sk-project' })
    expect(warnings).toEqual([
      `${join(cwd, '.env')}: ignored DEEPSEEK_BASE_URL, DSH_HOME, DSH_PERMISSION_MODE, NODE_OPTIONS: a project .env supplies only provider credentials (add credential names with DSH_PROJECT_ENV_ALLOW in the environment or $DSH_HOME/.env)`,
    ])
    expect(warnings.join('\n')).not.toMatch(/danger|attacker|elsewhere|evil|sk-project/)
  })

  it('lets $DSH_HOME/.env set anything but DSH_HOME, and leaves an inherited value alone', () => {
    const cwd = tempDir()
    const home = tempDir()
    write(
      join(home, '.env'),
      'DEEPSEEK_BASE_URL=http://127.0.0.1:9/v1\nDSH_PERMISSION_MODE=read-only\nDSH_HOME=/elsewhere\n',
    )
    const env: NodeJS.ProcessEnv = { DSH_PERMISSION_MODE: 'workspace-write' }
    const { warnings } = apply(env, cwd, home)
    expect(env).toEqual({ DEEPSEEK_BASE_URL: 'http://127.0.0.1:9/v1', DSH_PERMISSION_MODE: 'workspace-write' })
    expect(warnings).toEqual([`${join(home, '.env')}: ignored DSH_HOME: DSH_HOME cannot be set from a .env file`])
  })

  it('extends the allowlist from DSH_PROJECT_ENV_ALLOW in the environment or $DSH_HOME/.env, never the project .env', () => {
    const cwd = tempDir()
    const home = tempDir()
    write(join(cwd, '.env'), 'DSH_PROJECT_ENV_ALLOW=SELF_API_KEY\nSELF_API_KEY=a\nMY_API_KEY=b\nOTHER_TOKEN=c\n')
    let env: NodeJS.ProcessEnv = {}
    apply(env, cwd, home)
    expect(env).toEqual({})

    env = { DSH_PROJECT_ENV_ALLOW: 'MY_API_KEY' }
    apply(env, cwd, home)
    expect(env).toEqual({ DSH_PROJECT_ENV_ALLOW: 'MY_API_KEY', MY_API_KEY: 'b' })

    write(join(home, '.env'), 'DSH_PROJECT_ENV_ALLOW="OTHER_TOKEN, MY_API_KEY"\n')
    env = {}
    apply(env, cwd, home)
    expect(env).toEqual({ DSH_PROJECT_ENV_ALLOW: 'OTHER_TOKEN, MY_API_KEY', MY_API_KEY: 'b', OTHER_TOKEN: 'c' })
  })

  it('refuses a DSH_PROJECT_ENV_ALLOW naming a setting rather than a credential', () => {
    const cwd = tempDir()
    const home = tempDir()
    write(join(cwd, '.env'), 'DEEPSEEK_API_KEY=x\n')
    const attempt = (value: string) => () => apply({ DSH_PROJECT_ENV_ALLOW: value }, cwd, home)
    expect(attempt('DEEPSEEK_BASE_URL')).toThrow(DshUserError)
    expect(attempt('DEEPSEEK_BASE_URL')).toThrow(
      'DSH_PROJECT_ENV_ALLOW: "DEEPSEEK_BASE_URL" is not a credential name (it must end in _KEY, _TOKEN, _SECRET or _PASSWORD)',
    )
    expect(attempt('DSH_SECRET_KEY')).toThrow(
      'DSH_PROJECT_ENV_ALLOW: "DSH_SECRET_KEY" is a dsh setting, which a project .env never supplies',
    )
    // Named by file when it comes from $DSH_HOME/.env, and checked even with no project .env.
    write(join(home, '.env'), 'DSH_PROJECT_ENV_ALLOW=PATH\n')
    expect(() => apply({}, tempDir(), home)).toThrow(
      `${join(home, '.env')}: DSH_PROJECT_ENV_ALLOW: "PATH" is not a credential name`,
    )
  })

  it('layerEnv trusts every key of the files it is given', () => {
    const dir = tempDir()
    write(join(dir, 'a.env'), 'DSH_X=1\nY=2\n')
    const env: NodeJS.ProcessEnv = { Y: 'kept' }
    expect(layerEnv(env, [join(dir, 'a.env')])).toEqual({ DSH_X: join(dir, 'a.env') })
    expect(env).toEqual({ DSH_X: '1', Y: 'kept' })
  })

  it('ignores missing files and reports unreadable ones by name', () => {
    expect(apply({}, tempDir(), tempDir()).applied).toEqual({})
    const dir = tempDir()
    write(join(dir, '.env', 'x'), '')
    expect(() => readEnvFile(join(dir, '.env'))).toThrow(DshUserError)
    expect(() => readEnvFile(join(dir, '.env'))).toThrow(`${join(dir, '.env')}: cannot read: EISDIR`)
  })

  it('reports a malformed line by file and line number, without its content', () => {
    const dir = tempDir()
    const file = write(join(dir, '.env'), '# ok\nA=1\nsk-secret-value\n')
    expect(() => readEnvFile(file)).toThrow(
      new DshUserError(`${file}:3: malformed .env file: expected NAME=value (or a # comment)`),
    )
    write(file, 'A=1\nB="sk-unclosed\n\n')
    expect(() => readEnvFile(file)).toThrow(`${file}:2: malformed .env file: the "-quoted value is never closed`)
    const home = tempDir()
    write(join(home, '.env'), 'KEY: value\n')
    expect(() => apply({}, tempDir(), home)).toThrow(`${join(home, '.env')}:1: malformed .env file`)
  })
})
