// Styles of the Subagents section and the card strip (added while the plugin is loaded).
export const CSS = `
.dsh-subagents{list-style:none;margin:0;padding:0;}
.dsh-subagents .dsh-subagents{margin-left:14px;padding-left:8px;border-left:1px solid var(--dsh-color-border);}
.dsh-subagent{padding:6px 0;}
.dsh-subagent+.dsh-subagent{border-top:1px solid var(--dsh-color-border);}
.dsh-subagent-head{display:flex;flex-wrap:wrap;align-items:center;gap:6px;}
.dsh-subagent-id{font-family:ui-monospace,monospace;font-weight:600;}
.dsh-subagent-desc{flex:1 1 100%;overflow:hidden;text-overflow:ellipsis;}
.dsh-subagent-meta{display:flex;flex-wrap:wrap;gap:8px;font-size:12px;color:var(--dsh-color-fg-muted);}
.dsh-subagent-status{font-size:11px;border-radius:8px;padding:0 6px;background:var(--dsh-color-bg-subtle);}
.dsh-subagent-status[data-status=completed]{color:var(--dsh-color-success);}
.dsh-subagent-status[data-status=failed],.dsh-subagent-status[data-status=interrupted]{color:var(--dsh-color-danger);}
.dsh-subagent-status[data-status=cancelled]{color:var(--dsh-color-fg-muted);}
.dsh-subagent-spinner{display:inline-block;width:9px;height:9px;border:2px solid currentColor;border-right-color:transparent;border-radius:50%;animation:dsh-subagent-spin .8s linear infinite;vertical-align:-1px;margin-right:4px;}
@keyframes dsh-subagent-spin{to{transform:rotate(360deg)}}
@media (prefers-reduced-motion:reduce){.dsh-subagent-spinner{animation:none;}}
.dsh-subagent-reports{margin:2px 0 0 0;padding-left:18px;font-size:12px;}
.dsh-subagent-error{font-size:12px;color:var(--dsh-color-danger);white-space:pre-wrap;}
.dsh-subagent-link{font-size:12px;}
.dsh-subagent-toggle{font-size:12px;background:none;border:none;padding:0;color:inherit;text-decoration:underline;cursor:pointer;}
.dsh-subagent-strip{display:flex;flex-wrap:wrap;align-items:center;gap:8px;font-size:12px;padding:4px 2px;}

`
