// Image tokens in the composer and the user message: taken out of the text, shown as thumbnails,
// and put back (first) when the message is sent. The pure helpers directly, the rendering with
// the real React server renderer; interaction (attach, paste, drop, viewer) is in
// @dsh/ui-attachment's browser test.
import { createElement as h } from 'react'
import { renderToStaticMarkup } from 'react-dom/server'
import { describe, expect, it } from 'vitest'
import { Composer } from '../src/composer.tsx'
import { joinImages, splitImages, UserText } from '../src/images.tsx'
import { t } from './translate.ts'

const A = `sha256:${'a'.repeat(64)}`
const B = `sha256:${'b'.repeat(64)}`

describe('image tokens', () => {
  it('are taken out of the text with the space after them, the caret kept in place', () => {
    const text = `look [image ${A} one.png] and [image ${B}] here`
    const caret = text.indexOf('here')
    const split = splitImages(text, caret)
    expect(split.text).toBe('look and here')
    expect(split.text.slice(split.caret)).toBe('here')
    expect(split.images).toEqual([
      { id: A, name: 'one.png', token: `[image ${A} one.png]` },
      { id: B, token: `[image ${B}]` },
    ])
    expect(splitImages('no images', 3)).toEqual({ text: 'no images', images: [], caret: 3 })
    // Not a token: a short digest, another word.
    expect(splitImages('[image sha256:abc x] [picture sha256:x]').images).toEqual([])
  })

  it('go first when the message is sent; an image alone is a message', () => {
    const { images } = splitImages(`[image ${A} one.png] `)
    expect(joinImages('What is this?', images)).toBe(`[image ${A} one.png] What is this?`)
    expect(joinImages('', images)).toBe(`[image ${A} one.png]`)
    expect(joinImages('plain', [])).toBe('plain')
    const round = splitImages(joinImages('What is this?', images))
    expect(round.text).toBe('What is this?')
    expect(round.images).toEqual(images)
  })

  it('show as thumbnails in the composer (a draft with an image can be sent) and in a message', () => {
    const draft = renderToStaticMarkup(
      h(Composer, {
        t,
        running: false,
        onSend: () => {},
        onCancel: () => {},
        history: [],
        initialText: `[image ${A} one.png] `,
      }),
    )
    expect(draft).toContain(`<img src="/attachments/sha256%3A${'a'.repeat(64)}"`)
    expect(draft).toContain('aria-label="View image one.png"')
    expect(draft).toContain('aria-label="Remove image one.png"')
    expect(draft).not.toContain('[image')
    expect(draft).toMatch(/<button type="submit" class="dsh-button dsh-button-primary">Send<\/button>/)
    const message = renderToStaticMarkup(h(UserText, { text: `[image ${B}] Which colour?`, t }))
    expect(message).toContain('aria-label="View image unnamed"')
    expect(message).toMatch(/<\/ul>Which colour\?$/)
  })

  it("draw an image block's own source, before the text's tokens", () => {
    const src = 'data:image/png;base64,iVBORw0KGgo='
    const message = renderToStaticMarkup(
      h(UserText, { text: `[image ${B}] Which colour?`, t, blocks: [{ id: 'u1:image0', name: 'PNG 1', src }] }),
    )
    const imgs = [...message.matchAll(/<img src="([^"]+)"/g)].map((m) => m[1])
    expect(imgs).toEqual([src, `/attachments/sha256%3A${'b'.repeat(64)}`])
    expect(message).toContain('aria-label="View image PNG 1"')
    // A message with image blocks and no text is its thumbnails alone.
    expect(renderToStaticMarkup(h(UserText, { text: '', t, blocks: [{ id: 'x', src }] }))).toContain(`src="${src}"`)
  })
})
