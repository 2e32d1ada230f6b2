// @dsh/e2b/client: the browser half of the e2b world on `dsh web`, a plain ES module (no build
// step; `react` and `@dsh/client-runtime` resolve through the page's import map to the app's own
// copies). A side-panel section offers the sandbox's change for approval: when a turn of the
// session ends, and on the user's "Review changes", it asks the host (`e2b.review`); the user then
// applies it to the local tree (`e2b.apply`, the checked `git apply` of `--apply`) or keeps only
// the patch file (`e2b.keep`). Nothing reaches the local tree without that click. On a host with a
// world per workspace the same section asks `worlds.review/apply/keep` for the open session, whose
// change applies to that session's workspace folder only.
import { createElement as h, useEffect, useRef, useState } from 'react'
import { useCtx, useT } from '@dsh/client-runtime'

const NS = 'e2b'

const en = {
  title: 'E2B sandbox',
  review: 'Review changes',
  checking: 'Checking the sandbox…',
  none: 'No change in the sandbox to review.',
  offered: 'The sandbox changed {count} file(s). Apply them to {dir}?',
  apply: 'Apply to local files',
  keep: 'Keep the patch only',
  patch: 'Show the patch',
}
const zh = {
  title: 'E2B 沙箱',
  review: '查看改动',
  checking: '正在检查沙箱…',
  none: '沙箱中没有待查看的改动。',
  offered: '沙箱改动了 {count} 个文件。要应用到 {dir} 吗？',
  apply: '应用到本地文件',
  keep: '只保留补丁',
  patch: '显示补丁',
}

/** How many turns of the session have ended (a new one is when the sandbox may hold a change). */
function endedTurns(events) {
  let n = 0
  for (const event of events) if (event.type === 'turn/end') n++
  return n
}

function E2bReviewSection(props) {
  const ctx = useCtx()
  const t = useT(NS)
  const [state, setState] = useState({ phase: 'idle' })
  const busy = useRef(false)
  const ended = endedTurns(props.feed.withoutDeltas)
  // A host with a world per workspace (@dsh/workspace-worlds) answers `worlds.*` for this session's
  // own folder; a host-wide e2b world answers `e2b.*` for its one sandbox.
  const perSession = useRef(true)
  const call = async (method, params) => {
    if (perSession.current) {
      try {
        return await ctx.remote.call(`worlds.${method}`, { sessionId: props.sessionId, ...params })
      } catch (error) {
        if (error.code !== 'UNKNOWN_METHOD') throw error
        perSession.current = false
      }
    }
    return ctx.remote.call(`e2b.${method}`, params)
  }

  const review = async () => {
    if (busy.current) return
    busy.current = true
    setState({ phase: 'checking' })
    try {
      const { review } = await call('review', {})
      setState(review ? { phase: 'offered', review } : { phase: 'none' })
    } catch (error) {
      setState({ phase: 'error', line: error.message })
    } finally {
      busy.current = false
    }
  }
  const settle = async (method) => {
    if (busy.current || state.phase !== 'offered') return
    busy.current = true
    const review = state.review
    setState({ phase: 'settling', review })
    try {
      const result = await call(method, { file: review.file })
      setState(result.ok ? { phase: 'settled', line: result.line } : { phase: 'offered', review, line: result.line })
    } catch (error) {
      setState({ phase: 'offered', review, line: error.message })
    } finally {
      busy.current = false
    }
  }
  // The end of a turn: the sandbox may hold a new change, so it is offered without a click.
  useEffect(() => {
    if (ended > 0) void review()
    // Only a newly ended turn asks again (`review` is a new function each render).
  }, [ended])

  const children = [h('h3', { key: 'h' }, t('title'))]
  if (state.phase === 'checking') children.push(h('p', { key: 'c' }, t('checking')))
  if (state.phase === 'none') children.push(h('p', { key: 'n', 'data-e2b-none': 'true' }, t('none')))
  if (state.phase === 'offered' || state.phase === 'settling') {
    const { review } = state
    children.push(
      h('p', { key: 'o' }, t('offered', { count: review.files.length, dir: review.dir })),
      h(
        'ul',
        { key: 'f', 'data-e2b-files': 'true' },
        review.files.map((file) => h('li', { key: file }, file)),
      ),
      h('details', { key: 'd' }, h('summary', null, t('patch')), h('pre', { 'data-e2b-patch': 'true' }, review.patch)),
      h(
        'button',
        {
          key: 'a',
          type: 'button',
          'data-e2b-action': 'apply',
          disabled: state.phase === 'settling',
          onClick: () => settle('apply'),
        },
        t('apply'),
      ),
      h(
        'button',
        {
          key: 'k',
          type: 'button',
          'data-e2b-action': 'keep',
          disabled: state.phase === 'settling',
          onClick: () => settle('keep'),
        },
        t('keep'),
      ),
    )
  }
  if (state.line) children.push(h('p', { key: 'l', role: 'status', 'data-e2b-line': 'true' }, state.line))
  if (state.phase === 'settled' || state.phase === 'error' || state.phase === 'none' || state.phase === 'idle')
    children.push(h('button', { key: 'r', type: 'button', 'data-e2b-action': 'review', onClick: review }, t('review')))
  return h('section', { 'data-testid': 'e2b-review', 'data-e2b-phase': state.phase }, children)
}

export default {
  name: '@dsh/e2b',
  inject: ['slots', 'locale', 'remote'],
  apply(ctx) {
    ctx.locale.register(NS, { en, zh })
    ctx.slots.register('panel.side', { id: 'e2b-review', order: 30, component: E2bReviewSection })
  },
}
