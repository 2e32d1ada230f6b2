// The primitives' stylesheet, written with the tokens only (no colour literal): a theme change
// is a change of the custom properties, nothing here re-renders.
export const PRIMITIVES_CSS = `
.dsh-btn{display:inline-flex;align-items:center;gap:var(--dsh-space-2);font:inherit;font-size:var(--dsh-text-sm);font-weight:var(--dsh-weight-medium);line-height:1.2;padding:7px 12px;border-radius:var(--dsh-radius-md);border:1px solid var(--dsh-color-border-strong);background:var(--dsh-color-surface);color:var(--dsh-color-fg);cursor:pointer;transition:background var(--dsh-motion-fast) var(--dsh-motion-ease),border-color var(--dsh-motion-fast);}
.dsh-btn:hover:not(:disabled){background:var(--dsh-color-bg-hover);}
.dsh-btn[aria-pressed=true]{background:var(--dsh-color-accent-subtle);border-color:var(--dsh-color-accent);color:var(--dsh-color-accent);}
.dsh-btn:disabled{opacity:.55;cursor:default;}
.dsh-btn-sm{padding:4px 8px;font-size:var(--dsh-text-xs);}
.dsh-btn-primary{background:var(--dsh-color-accent);border-color:var(--dsh-color-accent);color:var(--dsh-color-accent-fg);}
.dsh-btn-primary:hover:not(:disabled){background:var(--dsh-color-accent);filter:brightness(1.08);}
.dsh-btn-ghost{background:transparent;border-color:transparent;}
.dsh-btn-danger{color:var(--dsh-color-danger);border-color:currentColor;background:transparent;}
.dsh-icon-btn{display:inline-flex;align-items:center;justify-content:center;width:30px;height:30px;padding:0;border:1px solid transparent;border-radius:var(--dsh-radius-md);background:transparent;color:var(--dsh-color-fg-muted);cursor:pointer;transition:background var(--dsh-motion-fast),color var(--dsh-motion-fast);}
.dsh-icon-btn:hover:not(:disabled),.dsh-icon-btn[aria-expanded=true],.dsh-icon-btn[aria-pressed=true],.dsh-icon-btn[data-state=open]{background:var(--dsh-color-bg-hover);color:var(--dsh-color-fg);}
.dsh-icon-btn:disabled{opacity:.5;cursor:default;}
.dsh-btn:focus-visible,.dsh-icon-btn:focus-visible,.dsh-select:focus-visible,.dsh-tab:focus-visible{outline:2px solid var(--dsh-color-focus);outline-offset:2px;}
.dsh-tooltip{z-index:var(--dsh-z-toast);background:var(--dsh-color-fg);color:var(--dsh-color-bg);font-size:var(--dsh-text-xs);padding:4px 8px;border-radius:var(--dsh-radius-sm);box-shadow:var(--dsh-shadow-2);max-width:280px;animation:dsh-fade var(--dsh-motion-fast) var(--dsh-motion-ease);}
.dsh-overlay{position:fixed;inset:0;background:var(--dsh-color-overlay);z-index:var(--dsh-z-dialog);animation:dsh-fade var(--dsh-motion-normal) var(--dsh-motion-ease);}
.dsh-dialog{position:fixed;z-index:var(--dsh-z-dialog);left:50%;top:12vh;transform:translateX(-50%);width:min(560px,calc(100vw - 24px));max-height:76vh;display:flex;flex-direction:column;background:var(--dsh-color-surface-raised);color:var(--dsh-color-fg);border:1px solid var(--dsh-color-border);border-radius:var(--dsh-radius-lg);box-shadow:var(--dsh-shadow-3);animation:dsh-rise var(--dsh-motion-normal) var(--dsh-motion-ease);}
.dsh-dialog-sm{width:min(400px,calc(100vw - 24px));}
.dsh-dialog-lg{width:min(880px,calc(100vw - 24px));max-height:84vh;top:8vh;}
.dsh-dialog:focus{outline:none;}
.dsh-dialog-head{display:flex;align-items:center;gap:var(--dsh-space-2);padding:var(--dsh-space-4) var(--dsh-space-4) var(--dsh-space-2) var(--dsh-space-5);}
.dsh-dialog-title{flex:1;margin:0;font-size:var(--dsh-text-lg);font-weight:var(--dsh-weight-semibold);}
.dsh-dialog-desc{margin:0 var(--dsh-space-5) var(--dsh-space-2);color:var(--dsh-color-fg-muted);font-size:var(--dsh-text-sm);}
.dsh-dialog-body{padding:var(--dsh-space-2) var(--dsh-space-5) var(--dsh-space-5);overflow:auto;}
.dsh-menu,.dsh-popover{z-index:var(--dsh-z-popover);min-width:180px;background:var(--dsh-color-surface-raised);color:var(--dsh-color-fg);border:1px solid var(--dsh-color-border);border-radius:var(--dsh-radius-md);box-shadow:var(--dsh-shadow-2);padding:var(--dsh-space-1);animation:dsh-fade var(--dsh-motion-fast) var(--dsh-motion-ease);}
.dsh-popover{padding:var(--dsh-space-3);max-width:min(360px,calc(100vw - 16px));}
.dsh-select-content{max-height:min(360px,var(--radix-select-content-available-height));min-width:var(--radix-select-trigger-width);overflow:hidden;}
.dsh-menu-item{display:flex;align-items:center;gap:var(--dsh-space-2);padding:6px 10px;border-radius:var(--dsh-radius-sm);font-size:var(--dsh-text-sm);cursor:pointer;outline:none;user-select:none;}
.dsh-menu-item[data-highlighted]{background:var(--dsh-color-accent-subtle);}
.dsh-menu-item[data-disabled]{opacity:.5;cursor:default;}
.dsh-menu-danger{color:var(--dsh-color-danger);}
.dsh-menu-sep{height:1px;background:var(--dsh-color-border);margin:var(--dsh-space-1) 0;}
.dsh-select{display:inline-flex;align-items:center;justify-content:space-between;gap:var(--dsh-space-2);font:inherit;font-size:var(--dsh-text-sm);padding:5px 10px;border-radius:var(--dsh-radius-md);border:1px solid var(--dsh-color-border-strong);background:var(--dsh-color-surface);color:var(--dsh-color-fg);cursor:pointer;min-width:0;}
.dsh-select:hover{background:var(--dsh-color-bg-hover);}
.dsh-select-icon{display:inline-flex;color:var(--dsh-color-fg-muted);}
.dsh-select-check{margin-left:auto;display:inline-flex;color:var(--dsh-color-accent);}
.dsh-tabs-list{display:flex;gap:var(--dsh-space-1);border-bottom:1px solid var(--dsh-color-border);}
.dsh-tabs-vertical{display:flex;gap:var(--dsh-space-4);}
.dsh-tabs-vertical .dsh-tabs-list{flex-direction:column;border-bottom:none;border-right:1px solid var(--dsh-color-border);padding-right:var(--dsh-space-2);min-width:150px;}
.dsh-tab{font:inherit;font-size:var(--dsh-text-sm);padding:6px 12px;border:none;background:transparent;color:var(--dsh-color-fg-muted);cursor:pointer;border-radius:var(--dsh-radius-sm);text-align:left;}
.dsh-tab[data-state=active]{color:var(--dsh-color-fg);font-weight:var(--dsh-weight-semibold);background:var(--dsh-color-bg-hover);}
.dsh-tab-panel{flex:1;min-width:0;padding-top:var(--dsh-space-3);}
.dsh-status-dot{display:inline-block;flex:none;width:8px;height:8px;border-radius:var(--dsh-radius-full);background:var(--dsh-color-border-strong);}
.dsh-status-running{background:var(--dsh-color-accent);animation:dsh-pulse 1.4s ease-in-out infinite;}
.dsh-status-waiting{background:var(--dsh-color-warn);}
.dsh-status-error,.dsh-status-failed{background:var(--dsh-color-danger);}
.dsh-status-idle{background:transparent;}
.dsh-kbd{display:inline-block;min-width:1.6em;text-align:center;font-family:var(--dsh-font-mono);font-size:var(--dsh-text-xs);padding:1px 5px;border:1px solid var(--dsh-color-border-strong);border-bottom-width:2px;border-radius:var(--dsh-radius-sm);background:var(--dsh-color-bg-subtle);}
@keyframes dsh-fade{from{opacity:0}to{opacity:1}}
@keyframes dsh-rise{from{opacity:0;transform:translate(-50%,6px)}to{opacity:1;transform:translate(-50%,0)}}
@keyframes dsh-pulse{50%{opacity:.35}}
@media (prefers-reduced-motion:reduce){.dsh-status-running{animation:none}}
`
