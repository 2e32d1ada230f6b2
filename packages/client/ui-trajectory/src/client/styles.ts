export const CSS = `
.dsh-traj-dialog { width: min(1100px, 94vw); max-height: 86vh; overflow: auto; }
.dsh-traj-totals { font-size: 13px; margin: 0 0 10px; }
.dsh-traj-turn h3 { font-size: 14px; margin: 14px 0 6px; }
.dsh-traj-table { width: 100%; border-collapse: collapse; font-size: 12px; font-variant-numeric: tabular-nums; }
.dsh-traj-table th, .dsh-traj-table td { text-align: left; padding: 3px 6px; border-bottom: 1px solid var(--border, #ddd); vertical-align: top; }
.dsh-traj-tool { display: inline-block; margin-right: 6px; font-family: ui-monospace, monospace; }
.dsh-traj-error { color: var(--danger, #c0362c); }
.dsh-traj-flag { color: var(--fg-muted, #666); }
.dsh-traj-timeline { position: relative; margin: 4px 0 8px; }
.dsh-traj-lane { position: relative; height: 10px; margin: 2px 0; background: var(--bg-soft, #f6f7f9); border-radius: 3px; }
.dsh-traj-bar { position: absolute; top: 1px; bottom: 1px; border-radius: 2px; }
.dsh-traj-bar-wait { background: color-mix(in srgb, var(--accent, #2f6fed) 30%, transparent); }
.dsh-traj-bar-gen { background: var(--accent, #2f6fed); }
.dsh-traj-bar-tool { background: #d08a1c; top: 3px; bottom: 3px; }
.dsh-traj-bar-tool.dsh-traj-error { background: var(--danger, #c0362c); }
`
