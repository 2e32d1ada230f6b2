// Settings styles (added while the plugin is loaded); colours follow html[data-theme].
export const CSS = `
.dsh-settings{width:min(960px,94vw);height:min(720px,90vh);display:flex;flex-direction:column;}
.dsh-settings-body{display:flex;gap:16px;flex:1;min-height:0;}
.dsh-settings-nav{display:flex;flex-direction:column;gap:4px;min-width:140px;border-right:1px solid var(--dsh-color-border);padding-right:12px;}
.dsh-settings-nav button{font:inherit;text-align:left;padding:6px 10px;border-radius:8px;border:0;background:transparent;color:inherit;cursor:pointer;}
.dsh-settings-nav button[aria-selected=true]{background:var(--dsh-color-bg-hover);font-weight:600;}
.dsh-settings-page{flex:1;overflow:auto;padding-right:6px;}
.dsh-settings-page h3{margin:18px 0 8px;font-size:15px;}
.dsh-settings-page h3:first-child{margin-top:0;}
.dsh-settings-row{display:flex;flex-wrap:wrap;gap:8px;align-items:center;margin:8px 0;}
.dsh-settings-row label{display:flex;flex-direction:column;gap:4px;font-size:13px;}
.dsh-settings-page input,.dsh-settings-page select,.dsh-settings-page textarea{font:inherit;font-size:13px;padding:5px 8px;border-radius:8px;border:1px solid var(--dsh-color-border);background:transparent;color:inherit;}
.dsh-settings-page textarea{font-family:ui-monospace,monospace;min-height:60px;}
.dsh-settings-page button{font:inherit;font-size:13px;padding:5px 12px;border-radius:8px;border:1px solid var(--dsh-color-border);background:transparent;color:inherit;cursor:pointer;}
.dsh-settings-page button.primary{background:var(--dsh-color-accent);border-color:var(--dsh-color-accent);color:var(--dsh-color-accent-fg);}
.dsh-settings-page button:disabled{opacity:.55;cursor:default;}
.dsh-settings-muted{color:var(--dsh-color-fg-muted);font-size:12px;margin:4px 0;}
.dsh-settings-error{color:var(--dsh-color-danger);font-size:13px;margin:4px 0;}
.dsh-settings-ok{color:var(--dsh-color-success);font-size:13px;margin:4px 0;}
.dsh-settings-list{list-style:none;margin:0;padding:0;}
.dsh-settings-item{border:1px solid var(--dsh-color-border);border-radius:10px;padding:8px 12px;margin:6px 0;}
.dsh-settings-item header{display:flex;gap:8px;align-items:center;flex-wrap:wrap;}
.dsh-settings-item header strong{font-size:14px;}
.dsh-settings .dsh-badge{font-size:11px;padding:1px 7px;border-radius:10px;border:1px solid currentColor;}
.dsh-settings .dsh-badge.ok{color:var(--dsh-color-success);}.dsh-settings .dsh-badge.warn{color:var(--dsh-color-warn);}.dsh-settings .dsh-badge.bad{color:var(--dsh-color-danger);}
.dsh-settings-form fieldset{border:1px solid var(--dsh-color-border);border-radius:8px;margin:6px 0;padding:6px 10px;}
.dsh-settings-form .dsh-field{display:flex;flex-direction:column;gap:3px;margin:6px 0;font-size:13px;}
.dsh-settings-form .dsh-field[data-invalid=true] input,.dsh-settings-form .dsh-field[data-invalid=true] select,.dsh-settings-form .dsh-field[data-invalid=true] textarea{border-color:#c92a2a;}
`
