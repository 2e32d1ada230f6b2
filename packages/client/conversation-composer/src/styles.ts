// The composer's stylesheet (the card, its field, the tool row, the hint and the error line).
// @dsh/ui-conversation adds it to its own stylesheet at the place it always had, then the image
// thumbnails' `IMAGES_CSS` (./images.tsx) at the end. Colours come from the design tokens.
export const COMPOSER_CSS = `.dsh-composer{max-width:860px;width:100%;margin:0 auto;box-sizing:border-box;border:1px solid var(--dsh-color-border-strong);border-radius:var(--dsh-radius-xl);background:var(--dsh-color-surface);box-shadow:var(--dsh-shadow-1);padding:8px 10px 8px;transition:border-color var(--dsh-motion-fast),box-shadow var(--dsh-motion-fast);}
.dsh-composer:focus-within{border-color:var(--dsh-color-focus);box-shadow:0 0 0 1px var(--dsh-color-focus),var(--dsh-shadow-1);}
.dsh-composer-takeover{border:none;box-shadow:none;background:transparent;padding:0;}
.dsh-composer-input{width:100%;box-sizing:border-box;resize:none;font:inherit;line-height:1.5;padding:4px 4px;border:none;background:transparent;color:inherit;}
.dsh-composer-input:focus{outline:none;}
.dsh-composer-bar{display:flex;align-items:center;flex-wrap:wrap;gap:8px;margin-top:6px;}
.dsh-composer-tools{display:flex;flex-wrap:wrap;align-items:center;gap:6px;}
.dsh-composer-tools select{font-size:12px;padding:3px 24px 3px 8px;border-color:var(--dsh-color-border);background-color:var(--dsh-color-bg-subtle);max-width:200px;}
@media (max-width:720px){.dsh-composer-hint{display:none;}}
.dsh-composer-hint{flex:1 1 0;min-width:0;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;font-size:12px;color:var(--dsh-color-fg-muted);}
.dsh-composer-tools button{font-size:12px;padding:3px 10px;}
.dsh-composer-error{color:var(--dsh-color-danger);font-size:13px;margin-top:4px;}
`
