// Takeover styles (added while the plugin is loaded); dark values under html[data-theme=dark].
export const CSS = `
.dsh-takeover{--k-border:var(--dsh-color-border-strong);--k-soft:var(--dsh-color-warn-subtle);--k-muted:var(--dsh-color-fg-muted);--k-bad:var(--dsh-color-danger);
  border:1px solid var(--k-border);background:var(--k-soft);border-radius:12px;padding:12px 14px;display:flex;flex-direction:column;gap:8px;max-width:860px;margin:0 auto;}
.dsh-takeover-kicker{font-size:12px;color:var(--k-muted);text-transform:uppercase;letter-spacing:.04em;outline:none;}
.dsh-takeover-title{margin:0;font-size:15px;outline:none;overflow-wrap:anywhere;}
.dsh-takeover-detail{white-space:pre-wrap;font-size:13px;}
.dsh-takeover-action pre{font-size:12px;max-height:200px;overflow:auto;margin:4px 0 0;}
.dsh-takeover-buttons{display:flex;gap:8px;align-items:center;flex-wrap:wrap;}
.dsh-takeover-stop{margin-left:auto;}
.dsh-takeover-deny label{display:flex;flex-direction:column;gap:4px;font-size:13px;}
.dsh-takeover-deny textarea,.dsh-question-free textarea{font:inherit;padding:6px 8px;border-radius:8px;border:1px solid var(--k-border);background:transparent;color:inherit;resize:vertical;width:100%;box-sizing:border-box;}
.dsh-takeover-error{color:var(--k-bad);font-size:13px;}
.dsh-question-item{border:none;padding:0;margin:0 0 6px;display:flex;flex-direction:column;gap:4px;}
.dsh-question-item legend{padding:0;margin-bottom:4px;font-weight:600;}
.dsh-question-option{display:flex;gap:6px;align-items:baseline;cursor:pointer;}
`
