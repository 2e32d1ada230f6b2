// The conversation's stylesheet, added to the page while the plugin is loaded. Colours come from
// the design tokens (`--dsh-color-*`, @dsh/client-design), which follow the theme.
import { COMPOSER_CSS, IMAGES_CSS } from '@dsh/conversation-composer'

export const CSS =
  `
.dsh-conv{
  display:flex;flex-direction:column;height:100%;min-height:0;color:var(--dsh-color-fg);}
.dsh-chat{flex:1;min-height:0;overflow-y:auto;position:relative;}
.dsh-chat-inner{max-width:860px;margin:0 auto;padding:16px 20px 24px;display:flex;flex-direction:column;gap:10px;}
.dsh-chat-inner>*{content-visibility:auto;contain-intrinsic-size:auto 48px;}
.dsh-chat-empty{color:var(--dsh-color-fg-muted);text-align:center;padding:48px 0;}
.dsh-empty{max-width:560px;margin:0 auto;text-align:left;color:var(--dsh-color-fg);}
.dsh-empty-title{font-size:var(--dsh-text-2xl);font-weight:var(--dsh-weight-semibold);letter-spacing:-.01em;margin:0 0 var(--dsh-space-2);}
.dsh-empty-where{font-family:var(--dsh-font-mono);font-size:var(--dsh-text-xs);color:var(--dsh-color-fg-muted);margin:0 0 var(--dsh-space-3);overflow-wrap:anywhere;}
.dsh-empty-what{color:var(--dsh-color-fg-muted);margin:0 0 var(--dsh-space-5);}
.dsh-empty-starters{list-style:none;margin:0;padding:0;display:grid;gap:var(--dsh-space-2);}
.dsh-starter{width:100%;text-align:left;font:inherit;padding:10px 14px;border-radius:var(--dsh-radius-lg);border:1px solid var(--dsh-color-border);background:var(--dsh-color-surface);color:var(--dsh-color-fg);cursor:pointer;box-shadow:var(--dsh-shadow-1);transition:border-color var(--dsh-motion-fast),background var(--dsh-motion-fast);}
.dsh-starter:hover{border-color:var(--dsh-color-accent);background:var(--dsh-color-accent-subtle);}
.dsh-starter:focus-visible{outline:2px solid var(--dsh-color-focus);outline-offset:2px;}
.dsh-msg{line-height:1.55;overflow-wrap:anywhere;}
.dsh-msg-user{display:flex;flex-direction:column;align-items:flex-end;}
.dsh-msg-user .dsh-msg-bubble{background:var(--dsh-color-user-bubble);border-radius:12px;padding:8px 12px;max-width:85%;white-space:pre-wrap;}
.dsh-queued .dsh-msg-bubble{opacity:.7;border:1px dashed var(--dsh-color-border);}
.dsh-badge{display:inline-block;font-size:11px;padding:1px 6px;border-radius:8px;border:1px solid var(--dsh-color-border);margin-right:6px;color:var(--dsh-color-fg-muted);}
.dsh-badge-ok{color:var(--dsh-color-success);border-color:currentColor;}.dsh-badge-bad{color:var(--dsh-color-danger);border-color:currentColor;}
.dsh-msg-meta{font-size:12px;color:var(--dsh-color-fg-muted);margin-top:4px;}
.dsh-warn{color:var(--dsh-color-warn);}
.dsh-caret{display:inline-block;width:7px;height:1em;background:var(--dsh-color-fg);vertical-align:text-bottom;animation:dsh-blink 1s steps(1) infinite;}
@keyframes dsh-blink{50%{opacity:0}}
.dsh-pulse{display:inline-block;width:8px;height:8px;border-radius:50%;background:var(--dsh-color-accent);margin-right:6px;animation:dsh-pulse 1.2s ease-in-out infinite;}
@keyframes dsh-pulse{50%{opacity:.3}}
@media (prefers-reduced-motion:reduce){.dsh-caret,.dsh-pulse{animation:none}}
.dsh-thinking,.dsh-context{font-size:13px;color:var(--dsh-color-fg-muted);}
.dsh-thinking summary,.dsh-context summary{cursor:pointer;user-select:none;}
.dsh-thinking-body,.dsh-context-body{white-space:pre-wrap;border-left:2px solid var(--dsh-color-border);padding:4px 10px;margin-top:4px;max-height:320px;overflow:auto;}
.dsh-msg-actions{display:flex;gap:2px;opacity:0;transition:opacity var(--dsh-motion-fast);margin-top:2px;}
.dsh-msg:hover>.dsh-msg-actions,.dsh-msg-actions:focus-within{opacity:1;}
@media (hover:none){.dsh-msg-actions{opacity:1;}}
.dsh-msg-actions .dsh-icon-btn{width:28px;height:28px;color:var(--dsh-color-fg-muted);}
.dsh-msg-edit{width:min(100%,640px);display:flex;flex-direction:column;gap:6px;}
.dsh-msg-edit-input{width:100%;box-sizing:border-box;font:inherit;line-height:1.5;padding:8px 12px;border-radius:12px;border:1px solid var(--dsh-color-focus);background:var(--dsh-color-surface);color:var(--dsh-color-fg);resize:vertical;}
.dsh-msg-edit-bar{display:flex;gap:8px;align-items:center;justify-content:flex-end;}
.dsh-msg-edit-images{justify-content:flex-end;padding:8px 8px 0 0;}
.dsh-msg-edit-bar .dsh-msg-meta{flex:1;margin:0;}
.dsh-msg-error{color:var(--dsh-color-danger);}
.dsh-thinking-preview{margin-left:8px;opacity:.75;font-style:italic;}
.dsh-working{color:var(--dsh-color-fg-muted);font-size:13px;}
.dsh-turn-end{font-size:13px;border-radius:8px;padding:6px 10px;background:var(--dsh-color-bg-subtle);}
.dsh-turn-error .dsh-turn-end-title,.dsh-turn-end-error{color:var(--dsh-color-danger);}
.dsh-notice{text-align:center;font-size:12px;color:var(--dsh-color-fg-muted);}
.dsh-earlier{align-self:center;}
.dsh-jump{position:sticky;bottom:8px;left:50%;transform:translateX(-50%);display:block;margin:0 auto;border:1px solid var(--dsh-color-border);background:var(--dsh-color-bg-subtle);color:var(--dsh-color-fg);border-radius:14px;padding:4px 12px;cursor:pointer;}
.dsh-link-button{background:none;border:none;color:var(--dsh-color-accent);cursor:pointer;padding:0 4px;font:inherit;font-size:12px;}
` +
  COMPOSER_CSS +
  `.dsh-button{font:inherit;font-size:13px;padding:5px 12px;border-radius:8px;border:1px solid var(--dsh-color-border);background:transparent;color:inherit;cursor:pointer;}
.dsh-button:disabled{opacity:.5;cursor:default;}
.dsh-button-primary{background:var(--dsh-color-accent);border-color:var(--dsh-color-accent);color:var(--dsh-color-accent-fg);}
.dsh-button-danger{color:var(--dsh-color-danger);border-color:currentColor;}
.dsh-button:focus-visible,.dsh-link-button:focus-visible{outline:2px solid var(--dsh-color-accent);outline-offset:2px;}
.dsh-panel-section{margin-bottom:14px;font-size:13px;}
.dsh-panel-section h3{font-size:12px;text-transform:uppercase;letter-spacing:.04em;color:var(--dsh-color-fg-muted);margin:0 0 6px;}
.dsh-panel-todo{list-style:none;margin:0;padding:0;}
.dsh-panel-todo li{display:flex;gap:8px;padding:2px 0;}
.dsh-panel-todo li[data-status=completed] .dsh-panel-todo-text{text-decoration:line-through;color:var(--dsh-color-fg-muted);}
.dsh-panel-todo li[data-status=in_progress] .dsh-panel-todo-text{font-weight:600;}
.dsh-sr-only{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap;}
.dsh-muted{color:var(--dsh-color-fg-muted);}
` +
  IMAGES_CSS
