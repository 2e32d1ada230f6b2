// The pickers rendered by React's server renderer: the current values, the built-in modes, and
// the acknowledgement full access needs.
import { createElement as h } from 'react'
import { renderToStaticMarkup } from 'react-dom/server'
import { describe, expect, it } from 'vitest'
import { ModelPicker, PermissionPicker, BUILTIN_MODES, RISKY_MODES } from '../src/client/pickers.tsx'
import { en, translator, zh } from '../src/client/strings.ts'

const t = translator(en)

describe('pickers', () => {
  it('the permission picker shows the session mode among the built-ins', () => {
    const html = renderToStaticMarkup(h(PermissionPicker, { t, current: 'read-only', onSelect: () => {} }))
    expect(html).toMatch(/<option value="read-only" selected="">Permissions: Read only<\/option>/)
    expect(html).toContain('Permissions: Full access')
    expect(BUILTIN_MODES).toEqual(['read-only', 'workspace-write', 'danger-full-access'])
    expect(RISKY_MODES).toEqual(['danger-full-access'])
  })

  it('a custom mode the host reports is listed too; no mode falls back to the default', () => {
    expect(renderToStaticMarkup(h(PermissionPicker, { t, current: 'ci-locked', onSelect: () => {} }))).toContain(
      '<option value="ci-locked" selected="">Permissions: ci-locked</option>',
    )
    expect(renderToStaticMarkup(h(PermissionPicker, { t: translator(zh), onSelect: () => {} }))).toContain(
      '<option value="workspace-write" selected="">权限: 工作区</option>',
    )
  })

  it('the model picker shows the current model while the catalog loads', () => {
    const html = renderToStaticMarkup(
      h(ModelPicker, {
        t,
        current: { provider: 'deepseek-official', model: 'deepseek-v4-flash', reasoningEffort: 'high' },
        listProviders: async () => ({ providers: [] }),
        listModels: async () => [],
        onSelect: () => {},
      }),
    )
    expect(html).toContain('Loading models…')
    expect(html).toContain('<option value="high" selected="">Reasoning: High</option>')
  })

  it('Chinese covers every English key', () => {
    expect(Object.keys(zh).sort()).toEqual(Object.keys(en).sort())
  })
})
