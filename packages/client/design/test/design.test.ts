// The design system as a package: what it exports and the stylesheet it installs. (That
// `@dsh/client-runtime/ui` gives the same bindings is the runtime's test: test/ui.test.ts there.)
import { describe, expect, it } from 'vitest'
import * as design from '@dsh/client-design'

describe('@dsh/client-design', () => {
  it('exports the primitives, the icons and the tokens', () => {
    for (const name of ['Button', 'IconButton', 'Tooltip', 'Dialog', 'Menu', 'Select', 'Popover', 'Tabs', 'Kbd'])
      expect(design).toHaveProperty(name)
    for (const icon of ['Check', 'Copy', 'GitFork', 'X']) expect(design).toHaveProperty(icon)
    expect(design.tokens.color.bg).toBe('var(--dsh-color-bg)')
  })

  it('installs its stylesheet once, first in <head>', () => {
    const added: { id: string; textContent: string }[] = []
    const head = { prepend: (el: { id: string; textContent: string }) => added.unshift(el) }
    const doc = {
      head,
      getElementById: (id: string) => added.find((el) => el.id === id) ?? null,
      createElement: () => ({ id: '', textContent: '' }),
    } as unknown as Document
    design.installDesign(doc)
    design.installDesign(doc)
    expect(added).toHaveLength(1)
    expect(added[0].id).toBe('dsh-design')
    expect(added[0].textContent).toContain('--dsh-color-bg')
    expect(added[0].textContent).toContain(design.PRIMITIVES_CSS)
  })
})
