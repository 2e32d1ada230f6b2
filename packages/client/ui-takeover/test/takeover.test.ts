// Approval and question takeovers: the answers a form builds (nothing by default) and what the
// takeovers render for the requests recorded from the real dsh web.
import { readFileSync } from 'node:fs'
import { createElement as h } from 'react'
import { renderToStaticMarkup } from 'react-dom/server'
import { describe, expect, it } from 'vitest'
import type { SessionStreamEvent, WireQuestion } from '@dsh/web-protocol'
import { foldConversation, type PendingApproval } from '@dsh/conversation-model'
import { buildAnswers, emptyForm, isAnswered, setText, toggleOption } from '../src/answers.ts'
import { ApprovalTakeover } from '../src/client/approval.tsx'
import { QuestionTakeover } from '../src/client/question.tsx'
import { en, translator, zh } from '../src/client/strings.ts'

const load = (name: string): SessionStreamEvent[] =>
  JSON.parse(readFileSync(new URL(`../../conversation-model/test/fixtures/${name}.json`, import.meta.url), 'utf8'))
const t = translator(en)
const pendingAt = (name: string, event: string) => {
  const frames = load(name)
  return foldConversation(frames.slice(0, frames.findIndex((f) => f.event === event) + 1))
}

describe('question answers', () => {
  const questions = pendingAt('question', 'question').questions[0].questions
  const [db, why] = questions as WireQuestion[]

  it('start empty and unanswered', () => {
    const form = emptyForm()
    expect(questions.map((q) => isAnswered(form, q))).toEqual([false, false])
    expect(buildAnswers(questions, form)).toEqual({})
  })

  it('single choice keeps one pick, toggles off; free text answers a question without options', () => {
    let form = toggleOption(emptyForm(), db, 'SQLite')
    form = toggleOption(form, db, 'Postgres')
    expect(form.selected.db).toEqual(['Postgres'])
    form = toggleOption(form, db, 'Postgres')
    expect(isAnswered(form, db)).toBe(false)
    form = toggleOption(form, db, 'SQLite')
    form = setText(form, why, '  keep it small ')
    expect(buildAnswers(questions, form)).toEqual({
      db: { selected: ['SQLite'] },
      why: { selected: [], text: 'keep it small' },
    })
  })

  it('multi choice keeps the options order and drops unknown labels', () => {
    const multi: WireQuestion = {
      id: 'm',
      question: '?',
      multiSelect: true,
      options: [{ label: 'a' }, { label: 'b' }, { label: 'c' }],
    }
    let form = toggleOption(emptyForm(), multi, 'c')
    form = toggleOption(form, multi, 'a')
    expect(form.selected.m).toEqual(['a', 'c'])
    form = { ...form, selected: { m: ['a', 'zzz'] } }
    expect(buildAnswers([multi], form)).toEqual({ m: { selected: ['a'] } })
  })
})

describe('takeovers', () => {
  it('approval: title, detail, exact action; allow once / for the session / deny, none preselected', () => {
    const approval = pendingAt('approvals', 'approval').approvals[0]
    const html = renderToStaticMarkup(h(ApprovalTakeover, { approval, t, onRespond: () => {} }))
    expect(html).toContain('Run `echo outside` outside the sandbox')
    expect(html).toContain('Reason given: needs the network')
    expect(html).toMatch(/>Allow once<.*>Allow for this session<.*>Deny</s)
    expect(html).toContain('&quot;command&quot;: &quot;echo outside&quot;')
    expect(html).not.toContain('autofocus')
    expect(html).toContain('role="alertdialog"')
  })

  it('approval: only the offered options show', () => {
    const approval: PendingApproval = {
      requestId: 'r1',
      request: { kind: 'tool', title: 'guarded', action: {}, options: ['allowed-once', 'rejected'], time: 0 },
    }
    const html = renderToStaticMarkup(
      h(ApprovalTakeover, { approval, more: 2, t: translator(zh), onRespond: () => {}, onStop: () => {} }),
    )
    expect(html).toContain('允许一次')
    expect(html).not.toContain('本会话内允许')
    expect(html).toContain('还有 2 个在等待')
    expect(html).toContain('停止本轮')
  })

  it('question: every question with its options, nothing checked, send disabled until answered', () => {
    const pending = pendingAt('question', 'question').questions[0]
    const html = renderToStaticMarkup(h(QuestionTakeover, { pending, t, onSubmit: () => {} }))
    expect(html).toContain('Which database?')
    expect(html).toContain('<span class="dsh-badge">Database</span>')
    expect(html).toMatch(/type="radio".*SQLite.*a file.*type="radio".*Postgres/s)
    expect(html).not.toContain('checked=""')
    expect(html).toMatch(/<button type="submit" class="dsh-button dsh-button-primary" disabled=""/)
    expect(html).toContain('Answer every question to send')
  })

  it('Chinese covers every English key', () => {
    expect(Object.keys(zh).sort()).toEqual(Object.keys(en).sort())
  })
})
