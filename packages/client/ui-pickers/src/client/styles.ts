// Picker styles (added while the plugin is loaded).
export const CSS = `
.dsh-picker{display:inline-flex;gap:6px;align-items:center;position:relative;font-size:13px;}
.dsh-picker select{font-size:12px;max-width:220px;}
.dsh-picker select:focus-visible{outline:2px solid var(--dsh-color-focus);outline-offset:1px;}
.dsh-picker-error{color:var(--dsh-color-danger);font-size:12px;}
.dsh-picker .dsh-sr-only{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap;}
.dsh-confirm{position:absolute;bottom:calc(100% + 6px);left:0;z-index:20;width:320px;background:var(--dsh-color-surface-raised);color:inherit;border:1px solid var(--dsh-color-warn);border-radius:10px;padding:12px;box-shadow:0 6px 24px rgba(0,0,0,.15);}
.dsh-confirm p{margin:6px 0 10px;font-size:13px;}
.dsh-confirm .dsh-takeover-buttons{display:flex;gap:8px;flex-wrap:wrap;}
.dsh-confirm button{font:inherit;font-size:13px;padding:4px 10px;border-radius:8px;border:1px solid var(--dsh-color-border-strong);background:transparent;color:inherit;cursor:pointer;}
.dsh-confirm .dsh-button-danger{color:var(--dsh-color-danger);border-color:currentColor;}
`
