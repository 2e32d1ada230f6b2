// Markdown styles: block spacing, task lists, inline code, code blocks with a highlight palette
// (light, and dark under html[data-theme=dark]), tables. The page adds them once (MARKDOWN_CSS).
export const MARKDOWN_CSS = `
.dsh-md>*:first-child{margin-top:0}.dsh-md>*:last-child{margin-bottom:0}
.dsh-md p{margin:.5em 0}.dsh-md ul,.dsh-md ol{padding-left:1.4em;margin:.5em 0}
.dsh-md li.dsh-md-task{list-style:none;margin-left:-1.2em}.dsh-md li.dsh-md-task input{margin-right:6px}
.dsh-md-code{background:var(--dsh-color-code-bg);border-radius:4px;padding:1px 4px;font-size:.92em;}
.dsh-md-pre{border:1px solid var(--dsh-color-border);border-radius:8px;margin:.6em 0;overflow:hidden;}
.dsh-md-pre-bar{display:flex;justify-content:space-between;align-items:center;font-size:12px;color:var(--dsh-color-fg-muted);padding:2px 4px 2px 10px;background:var(--dsh-color-bg-subtle);border-bottom:1px solid var(--dsh-color-border);}
.dsh-md-pre-lang{font-family:var(--dsh-font-mono);}
.dsh-md-copy{background:none;border:1px solid transparent;border-radius:var(--dsh-radius-sm);color:var(--dsh-color-fg-muted);cursor:pointer;font:inherit;font-size:12px;padding:2px 8px;}
.dsh-md-copy:hover{background:var(--dsh-color-bg-hover);color:var(--dsh-color-fg);}
.dsh-md-copy:focus-visible{outline:2px solid var(--dsh-color-focus);outline-offset:1px;}
.dsh-md-pre pre{margin:0;padding:10px 12px;overflow-x:auto;background:var(--dsh-color-code-bg);font-size:13px;line-height:1.45;}
.dsh-md .hljs-keyword,.dsh-md .hljs-selector-tag,.dsh-md .hljs-literal{color:#8839ef}
.dsh-md .hljs-string,.dsh-md .hljs-regexp,.dsh-md .hljs-addition{color:#2f7d32}
.dsh-md .hljs-comment,.dsh-md .hljs-quote{color:#8a8f98;font-style:italic}
.dsh-md .hljs-number,.dsh-md .hljs-symbol,.dsh-md .hljs-variable{color:#b35c00}
.dsh-md .hljs-title,.dsh-md .hljs-section,.dsh-md .hljs-function .hljs-title{color:#1c5fc9}
.dsh-md .hljs-built_in,.dsh-md .hljs-type,.dsh-md .hljs-class .hljs-title{color:#a2266b}
.dsh-md .hljs-attr,.dsh-md .hljs-attribute,.dsh-md .hljs-property{color:#0b7285}
.dsh-md .hljs-meta{color:#6b7280}.dsh-md .hljs-deletion{color:#c92a2a}
html[data-theme=dark] .dsh-md .hljs-keyword,html[data-theme=dark] .dsh-md .hljs-selector-tag,html[data-theme=dark] .dsh-md .hljs-literal{color:#cba6f7}
html[data-theme=dark] .dsh-md .hljs-string,html[data-theme=dark] .dsh-md .hljs-regexp,html[data-theme=dark] .dsh-md .hljs-addition{color:#a6e3a1}
html[data-theme=dark] .dsh-md .hljs-number,html[data-theme=dark] .dsh-md .hljs-symbol,html[data-theme=dark] .dsh-md .hljs-variable{color:#fab387}
html[data-theme=dark] .dsh-md .hljs-title,html[data-theme=dark] .dsh-md .hljs-section{color:#89b4fa}
html[data-theme=dark] .dsh-md .hljs-built_in,html[data-theme=dark] .dsh-md .hljs-type{color:#f5c2e7}
html[data-theme=dark] .dsh-md .hljs-attr,html[data-theme=dark] .dsh-md .hljs-attribute,html[data-theme=dark] .dsh-md .hljs-property{color:#94e2d5}
html[data-theme=dark] .dsh-md .hljs-deletion{color:#f38ba8}
.dsh-md-table{overflow-x:auto;}.dsh-md table{border-collapse:collapse;margin:.5em 0}.dsh-md th,.dsh-md td{border:1px solid var(--dsh-color-border);padding:4px 8px}
.dsh-md blockquote{margin:.5em 0;padding-left:10px;border-left:3px solid var(--dsh-color-border);color:var(--dsh-color-fg-muted)}
`
