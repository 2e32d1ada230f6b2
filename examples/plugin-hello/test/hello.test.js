// Mounts the plugin into a real Cordis context beside a small stand-in for dsh's tool registry
// (`npm install` first: cordis and schemastery are dev dependencies). The end-to-end test through
// `dsh plugin add` and a real dsh run lives in packages/boot/plugin-manager/test/.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Context } from 'cordis'
import * as plugin from '../index.js'

function contextWithTools() {
  const ctx = new Context()
  const tools = new Map()
  ctx.provide('tools')
  ctx.set('tools', { register: (tool) => (tools.set(tool.name, tool), () => tools.delete(tool.name)) })
  return { ctx, tools }
}

test('the hello tool greets with the configured word and punctuation', async () => {
  const { ctx, tools } = contextWithTools()
  await ctx.plugin(plugin, { greeting: 'Hi', punctuation: '.' })
  assert.deepEqual(await tools.get('hello').execute({ name: 'Ada' }), { content: 'Hi, Ada.' })
})

test('a punctuation other than ! or . is refused', async () => {
  const { ctx } = contextWithTools()
  await assert.rejects(() => ctx.plugin(plugin, { punctuation: '?' }).await(), /punctuation/)
})
