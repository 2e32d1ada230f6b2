// Streaming-friendly Markdown: marked's lexer (GFM: tables, task lists, strikethrough, autolinks)
// turns the text into tokens and this module renders them as React elements. No HTML string is
// ever injected: raw HTML in the text shows as text, links keep only http(s)/mailto targets.
// Top-level blocks are memoised by their source, so while an answer streams only its last
// block re-renders. Code blocks are highlighted lazily (./highlight.ts), once complete.
// biome-ignore-all lint/suspicious/noArrayIndexKey: blocks, list items and table cells are positional tokens of re-lexed text with no identity of their own; the index is their identity (it keeps the memoised blocks of a streaming answer in place)
import { Lexer, type Token, type Tokens } from 'marked'
import {
  type ComponentType,
  createContext,
  memo,
  useContext,
  useEffect,
  useMemo,
  useState,
  type ReactNode,
} from 'react'
import { highlight, languageLabel, languageOf } from './highlight.ts'
/**
 * Looks up the renderer's few labels: `copy`, `copied`, `taskDone`, `taskOpen` (the caller's
 * namespace provides them).
 */
export type Translate = (key: string, vars?: Record<string, string | number>) => string

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0' }

/** Decodes the character references a Markdown source may hold (`&amp;`, `&#39;`, `&#x2014;`). */
export function decodeEntities(text: string): string {
  if (!text.includes('&')) return text
  return text.replace(/&(#x[0-9a-f]+|#[0-9]+|[a-z]+);/gi, (match, body: string) => {
    if (body[0] === '#') {
      const code = body[1] === 'x' || body[1] === 'X' ? parseInt(body.slice(2), 16) : parseInt(body.slice(1), 10)
      return Number.isFinite(code) && code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : match
    }
    return ENTITIES[body.toLowerCase()] ?? match
  })
}

/** Whether a link target is safe to follow from the page. */
export function safeHref(href: string): string | undefined {
  const trimmed = href.trim()
  if (/^(https?:|mailto:)/i.test(trimmed)) return trimmed
  if (/^#[\w-]*$/.test(trimmed)) return trimmed
  return undefined
}

function inline(tokens: Token[] | undefined, keyPrefix = ''): ReactNode[] {
  if (!tokens) return []
  return tokens.map((token, i) => {
    const key = `${keyPrefix}${i}`
    switch (token.type) {
      case 'text':
        return (token as Tokens.Text).tokens ? (
          <span key={key}>{inline((token as Tokens.Text).tokens, `${key}.`)}</span>
        ) : (
          decodeEntities((token as Tokens.Text).text)
        )
      case 'escape':
        return (token as Tokens.Escape).text
      case 'strong':
        return <strong key={key}>{inline((token as Tokens.Strong).tokens, `${key}.`)}</strong>
      case 'em':
        return <em key={key}>{inline((token as Tokens.Em).tokens, `${key}.`)}</em>
      case 'del':
        return <del key={key}>{inline((token as Tokens.Del).tokens, `${key}.`)}</del>
      case 'codespan':
        return (
          <code key={key} className="dsh-md-code">
            {decodeEntities((token as Tokens.Codespan).text)}
          </code>
        )
      case 'br':
        return <br key={key} />
      case 'link': {
        const link = token as Tokens.Link
        const href = safeHref(link.href)
        const children = inline(link.tokens, `${key}.`)
        return href ? (
          <a key={key} href={href} target="_blank" rel="noopener noreferrer" title={link.title ?? undefined}>
            {children}
          </a>
        ) : (
          <span key={key}>{children}</span>
        )
      }
      case 'image': {
        const image = token as Tokens.Image
        const href = safeHref(image.href)
        return href ? (
          <a key={key} href={href} target="_blank" rel="noopener noreferrer">
            {image.text || href}
          </a>
        ) : (
          image.text
        )
      }
      case 'html':
        return (token as Tokens.HTML).text
      case 'checkbox':
        return null
      default:
        return 'raw' in token ? token.raw : null
    }
  })
}

/** What a fence renderer gets: the fence's language tag and text, and whether the fence is closed. */
export interface FenceProps {
  lang: string
  code: string
  complete: boolean
  /** The ordinary code block, for a renderer that declines this fence. */
  fallback: ReactNode
}

/**
 * A renderer for fenced code blocks that carry a language tag (e.g. generative UI fences): given
 * by the host of the Markdown (a context, so nested blocks see it too); absent, code renders as code.
 */
export const MarkdownFences = createContext<ComponentType<FenceProps> | undefined>(undefined)

function CodeBlock(props: { text: string; lang?: string; complete: boolean; t: Translate }) {
  const Fence = useContext(MarkdownFences)
  const lang = props.lang?.trim()
  if (Fence && lang)
    return <Fence lang={lang} code={props.text} complete={props.complete} fallback={<PlainCode {...props} />} />
  return <PlainCode {...props} />
}

function PlainCode({ text, lang, complete, t }: { text: string; lang?: string; complete: boolean; t: Translate }) {
  const language = languageOf(lang)
  const [html, setHtml] = useState<{ source: string; html: string } | undefined>(undefined)
  const [copied, setCopied] = useState(false)
  useEffect(() => {
    if (!complete || !language || html?.source === text) return
    let live = true
    highlight(text, language).then(
      (value) => live && setHtml({ source: text, html: value }),
      () => {},
    )
    return () => {
      live = false
    }
  }, [text, language, complete, html?.source])
  const copy = () => {
    void globalThis.navigator?.clipboard?.writeText(text).then(
      () => {
        setCopied(true)
        setTimeout(() => setCopied(false), 1500)
      },
      () => {},
    )
  }
  const highlighted = html && html.source === text
  const named = languageLabel(lang)
  return (
    <div className="dsh-md-pre" data-lang={lang || undefined} data-code-block="true">
      <div className="dsh-md-pre-bar">
        <span className="dsh-md-pre-lang" data-code-lang="true">
          {named ?? t('code')}
        </span>
        <button
          type="button"
          className="dsh-md-copy"
          aria-label={copied ? t('copied') : named ? t('copyCodeIn', { language: named }) : t('copyCode')}
          data-action="copy-code"
          onClick={copy}
        >
          {copied ? t('copied') : t('copy')}
        </button>
      </div>
      <pre>
        {highlighted ? (
          <code
            className={`hljs language-${language}`}
            data-highlighted="yes"
            // biome-ignore lint/security/noDangerouslySetInnerHtml: highlight.js output, which escapes the source text; only its own <span class> markup is HTML
            dangerouslySetInnerHTML={{ __html: html.html }}
          />
        ) : (
          <code>{text}</code>
        )}
      </pre>
    </div>
  )
}

function Block({ token, complete, t }: { token: Token; complete: boolean; t: Translate }): ReactNode {
  switch (token.type) {
    case 'space':
    case 'def':
      return null
    case 'paragraph':
      return <p>{inline((token as Tokens.Paragraph).tokens)}</p>
    case 'text':
      return (
        <p>
          {(token as Tokens.Text).tokens
            ? inline((token as Tokens.Text).tokens)
            : decodeEntities((token as Tokens.Text).text)}
        </p>
      )
    case 'heading': {
      const heading = token as Tokens.Heading
      const level = Math.min(6, Math.max(1, heading.depth))
      const Tag = `h${level}` as 'h1'
      return <Tag>{inline(heading.tokens)}</Tag>
    }
    case 'code':
      return (
        <CodeBlock text={(token as Tokens.Code).text} lang={(token as Tokens.Code).lang} complete={complete} t={t} />
      )
    case 'hr':
      return <hr />
    case 'blockquote':
      return (
        <blockquote>
          {(token as Tokens.Blockquote).tokens.map((child, i) => (
            <Block key={i} token={child} complete={complete} t={t} />
          ))}
        </blockquote>
      )
    case 'list': {
      const list = token as Tokens.List
      const items = list.items.map((item, i) => (
        <li key={i} className={item.task ? 'dsh-md-task' : undefined}>
          {item.task ? (
            <input
              type="checkbox"
              checked={item.checked === true}
              readOnly
              disabled
              aria-label={item.checked ? t('taskDone') : t('taskOpen')}
            />
          ) : null}
          {item.tokens.map((child, j) =>
            child.type === 'checkbox' ? null : child.type === 'text' && !list.loose ? (
              <span key={j}>{inline((child as Tokens.Text).tokens ?? [child])}</span>
            ) : (
              <Block key={j} token={child} complete={complete} t={t} />
            ),
          )}
        </li>
      ))
      return list.ordered ? <ol start={list.start === '' ? undefined : list.start}>{items}</ol> : <ul>{items}</ul>
    }
    case 'table': {
      const table = token as Tokens.Table
      const align = (a: string | null) => (a ? { textAlign: a as 'left' } : undefined)
      return (
        <div className="dsh-md-table">
          <table>
            <thead>
              <tr>
                {table.header.map((cell, i) => (
                  <th key={i} style={align(cell.align)}>
                    {inline(cell.tokens)}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {table.rows.map((row, r) => (
                <tr key={r}>
                  {row.map((cell, i) => (
                    <td key={i} style={align(cell.align)}>
                      {inline(cell.tokens)}
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )
    }
    case 'html':
      return <p>{(token as Tokens.HTML).text}</p>
    default:
      return 'raw' in token ? <p>{token.raw}</p> : null
  }
}

const MemoBlock = memo(Block, (a, b) => a.token.raw === b.token.raw && a.complete === b.complete && a.t === b.t)

export interface MarkdownProps {
  text: string
  /** The text is still growing: its last block may be incomplete (code is not highlighted yet). */
  streaming?: boolean
  t: Translate
}

/** A small document that goes through every block rule the lexer tries on a typical answer. */
const WARM_UP =
  '# Heading\n\nSetext\n---\n\nA paragraph with **bold**, *em*, `code`, ~~old~~ and [a link](https://example.com) <b>x</b>.\n\n> quoted\n\n- item\n- [x] task\n1. first\n\n```ts\nconst a = 1\n```\n\n    indented\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n***\n'

/**
 * Lexes a small sample once, so the lexer's regular expressions are compiled (V8 compiles each
 * on its first use) before the first answer of a fresh page, not inside the frame that shows it.
 * Call it when the page is idle; returns the block types the sample produced.
 */
export function warmUp(): string[] {
  return Lexer.lex(WARM_UP, { gfm: true }).map((token) => token.type)
}

/** Renders Markdown `text` as React elements. */
export const Markdown = memo(function Markdown({ text, streaming = false, t }: MarkdownProps) {
  const tokens = useMemo(() => Lexer.lex(text, { gfm: true }), [text])
  const last = tokens.length - 1
  return (
    <div className="dsh-md">
      {tokens.map((token, i) => (
        <MemoBlock key={i} token={token} complete={!streaming || i < last} t={t} />
      ))}
    </div>
  )
})
