// Tool card styles (added while the plugin is loaded); dark values under html[data-theme=dark].
export const CSS = `
.dsh-tool{--t-border:var(--dsh-color-border);--t-soft:var(--dsh-color-bg-subtle);--t-muted:var(--dsh-color-fg-muted);--t-term:#16181d;--t-term-fg:#e6e7ea;--t-add:var(--dsh-color-success-subtle);--t-add-fg:var(--dsh-color-success);--t-del:var(--dsh-color-danger-subtle);--t-del-fg:var(--dsh-color-danger);--t-bad:var(--dsh-color-danger);--t-ok:var(--dsh-color-success);
  border:1px solid var(--t-border);border-radius:10px;overflow:hidden;font-size:13px;}
html[data-theme=dark] .dsh-tool{--t-term:#0f1115;}
.dsh-tool-head{display:flex;align-items:center;gap:8px;background:var(--t-soft);padding:0 8px 0 0;}
.dsh-tool-toggle{flex:1;min-width:0;display:flex;align-items:center;gap:8px;background:none;border:none;color:inherit;font:inherit;padding:6px 10px;cursor:pointer;text-align:left;}
.dsh-tool-toggle:disabled{cursor:default;}
.dsh-tool-toggle:focus-visible{outline:2px solid var(--dsh-color-focus);outline-offset:-2px;}
.dsh-tool-icon{width:16px;text-align:center;color:var(--t-muted);font-family:ui-monospace,monospace;}
.dsh-tool-name{font-weight:600;}
.dsh-tool-title{color:var(--t-muted);overflow:hidden;text-overflow:ellipsis;white-space:nowrap;font-family:ui-monospace,monospace;}
.dsh-tool-badges{display:flex;gap:6px;align-items:center;white-space:nowrap;}
.dsh-tool-status{font-size:11px;color:var(--t-muted);}
.dsh-tool-status-error{color:var(--t-bad);}
.dsh-tool-status-running::before,.dsh-tool-status-streaming::before{content:'';display:inline-block;width:6px;height:6px;border-radius:50%;background:currentColor;margin-right:4px;animation:dsh-pulse 1.2s ease-in-out infinite;}
.dsh-tool-progress{display:flex;align-items:center;gap:8px;padding:4px 10px;font-size:12px;color:var(--t-muted);border-top:1px solid var(--t-border);}
.dsh-tool-progress-bar{width:120px;height:6px;flex:none;}
.dsh-tool-progress-count{font-variant-numeric:tabular-nums;}
.dsh-tool-progress-message{overflow:hidden;text-overflow:ellipsis;white-space:nowrap;}
.dsh-tool-images{display:flex;flex-direction:column;gap:4px;padding:6px 10px;border-top:1px solid var(--t-border);}
.dsh-tool-body{padding:8px 10px;display:flex;flex-direction:column;gap:6px;}
.dsh-tool-section{font-size:11px;text-transform:uppercase;letter-spacing:.04em;color:var(--t-muted);}
.dsh-tool-error{color:var(--t-bad);white-space:pre-wrap;}
.dsh-terminal{background:var(--t-term);color:var(--t-term-fg);border-radius:6px;padding:8px 10px;font-family:ui-monospace,monospace;font-size:12.5px;}
.dsh-terminal-command{color:#9ecbff;margin-bottom:4px;white-space:pre-wrap;word-break:break-all;}
.dsh-long-pre{margin:0;font-family:ui-monospace,monospace;font-size:12.5px;line-height:18px;overflow-x:auto;}
.dsh-line{white-space:pre;min-height:18px;}
.dsh-long-bar{display:flex;gap:8px;align-items:center;font-size:12px;margin-top:4px;}
.dsh-diff .dsh-line{padding:0}
.dsh-diff-add{display:block;background:var(--t-add);color:var(--t-add-fg);}
.dsh-diff-del{display:block;background:var(--t-del);color:var(--t-del-fg);}
.dsh-diff-hunk{display:block;color:var(--t-muted);}
.dsh-diff-no{display:inline-block;width:3.2em;text-align:right;color:var(--t-muted);padding-right:6px;user-select:none;opacity:.7;}
.dsh-diff-sign{display:inline-block;width:1.2em;user-select:none;}
.dsh-add{color:var(--t-ok);}.dsh-del{color:var(--t-bad);}
.dsh-todo{list-style:none;margin:0;padding:0;}
.dsh-todo li{display:flex;gap:8px;padding:2px 0;}
.dsh-todo-completed .dsh-todo-text{text-decoration:line-through;color:var(--t-muted);}
.dsh-todo-in_progress .dsh-todo-text{font-weight:600;}
.dsh-tool-plain{font-size:13px;color:var(--t-muted);}
`
