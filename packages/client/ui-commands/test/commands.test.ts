// Matching commands for the menu and recognising a command line of a listed command.
import { describe, expect, it } from 'vitest'
import { commandOfLine, matchCommands } from '../src/commands.ts'

const LIST = [
  { name: 'compact', description: 'Summarize', usage: '[focus]' },
  { name: 'help', description: 'Help' },
  { name: 'goal', description: 'Goal' },
  { name: 'plan', description: 'Plan' },
]

describe('command menu helpers', () => {
  it('an empty query lists every command; a prefix wins over a fuzzy hit; no match is empty', () => {
    expect(matchCommands(LIST, '').map((c) => c.name)).toEqual(['compact', 'goal', 'help', 'plan'])
    expect(matchCommands(LIST, 'p')[0].name).toBe('plan')
    expect(matchCommands(LIST, 'cmp').map((c) => c.name)).toEqual(['compact'])
    expect(matchCommands(LIST, 'zzz')).toEqual([])
  })

  it('a line runs a command only when it names a listed one', () => {
    expect(commandOfLine(LIST, '/compact')?.name).toBe('compact')
    expect(commandOfLine(LIST, '  /compact keep the API notes\nand more')?.name).toBe('compact')
    expect(commandOfLine(LIST, '/compacted')).toBeUndefined()
    expect(commandOfLine(LIST, '/usr/bin/env')).toBeUndefined()
    expect(commandOfLine(LIST, 'please /compact')).toBeUndefined()
    expect(commandOfLine([], '/compact')).toBeUndefined()
  })
})
