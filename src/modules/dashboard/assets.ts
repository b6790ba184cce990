/**
 * The dashboard's only stylesheet and script, served from the process itself (no CDN).
 * They are TypeScript strings so `tsc` ships them in dist/ with no copy step; their URLs
 * carry a content hash, so browsers may cache them for a year.
 */
import { createHash } from 'node:crypto';

const CSS = `
:root{--ink:#0f172a;--muted:#475569;--line:#cbd5e1;--soft:#f1f5f9;--bg:#f8fafc;--link:#1d4ed8;--focus:#2563eb;
--ok:#166534;--ok-bg:#dcfce7;--warn:#92400e;--warn-bg:#fef3c7;--bad:#991b1b;--bad-bg:#fee2e2;--info:#1e40af;--info-bg:#dbeafe}
*{box-sizing:border-box}
[hidden]{display:none!important}
html{font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);background:var(--bg)}
body{margin:0}
a{color:var(--link)}
a:hover{text-decoration-thickness:2px}
:focus-visible{outline:3px solid var(--focus);outline-offset:2px}
.skip{position:absolute;left:-999px;top:0;background:#fff;padding:.5rem 1rem;z-index:10}
.skip:focus{left:1rem;top:.5rem}
.top{background:var(--ink);color:#fff}
.bar{max-width:1240px;margin:0 auto;padding:.6rem 1.25rem;display:flex;flex-wrap:wrap;align-items:center;gap:.5rem 1rem}
.logo{color:#fff;font-weight:700;text-decoration:none;font-size:1.1rem}
.brand{color:#cbd5e1;border-left:1px solid #475569;padding-left:1rem;max-width:14rem;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.top nav ul{list-style:none;display:flex;flex-wrap:wrap;gap:.1rem;margin:0;padding:0}
.top nav a{color:#e2e8f0;text-decoration:none;padding:.35rem .55rem;border-radius:6px;display:block;font-size:.95rem}
.top nav a:hover{background:#1e293b;color:#fff}
.top nav a[aria-current=page]{background:#fff;color:var(--ink);font-weight:600}
.user{margin-left:auto;display:flex;align-items:center;gap:.75rem;color:#cbd5e1;font-size:.9rem}
.user button{background:none;border:1px solid #64748b;color:#fff;border-radius:6px;padding:.25rem .6rem;font:inherit;cursor:pointer}
main{max-width:1240px;margin:0 auto;padding:1.25rem 1.25rem 3rem}
main:focus{outline:none}
h1{font-size:1.6rem;margin:.5rem 0 1rem}
h2{font-size:1.2rem;margin:2rem 0 .75rem}
h3{font-size:1rem;margin:1.25rem 0 .5rem}
.head{display:flex;flex-wrap:wrap;align-items:center;justify-content:space-between;gap:.75rem}
.muted{color:var(--muted)}
.small{font-size:.875rem}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.85em}
.flash{border-radius:8px;padding:.75rem 1rem;margin:0 0 1rem;border:1px solid}
.flash.ok{background:var(--ok-bg);color:var(--ok);border-color:#86efac}
.flash.error{background:var(--bad-bg);color:var(--bad);border-color:#fca5a5}
.flash.error ul{margin:.25rem 0 0;padding-left:1.25rem}
.panel{background:#fff;border:1px solid var(--line);border-radius:10px;padding:1rem 1.25rem;margin-bottom:1.25rem}
.grid{display:grid;gap:1rem;grid-template-columns:repeat(auto-fit,minmax(170px,1fr))}
.cols{display:grid;gap:1.25rem;grid-template-columns:repeat(auto-fit,minmax(420px,1fr));align-items:start}
figure{margin:0 0 1.25rem}
.panel>h2:first-child,.secret>h2:first-child{margin-top:0}
.card{background:#fff;border:1px solid var(--line);border-radius:10px;padding:.8rem 1rem}
.card dt{color:var(--muted);font-size:.85rem}
.card dd{margin:0;font-size:1.45rem;font-weight:650}
.card .sub{font-size:.85rem;color:var(--muted)}
.table-wrap{overflow-x:auto;background:#fff;border:1px solid var(--line);border-radius:10px}
table{border-collapse:collapse;width:100%;font-size:.925rem}
caption{text-align:left;padding:.6rem .9rem;font-weight:600;color:var(--muted)}
th,td{text-align:left;padding:.55rem .9rem;border-top:1px solid #e2e8f0;vertical-align:top}
thead th{background:var(--soft);border-top:0;font-weight:600;white-space:nowrap}
tbody th{font-weight:600}th .muted{font-weight:400}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tbody tr:hover{background:#f8fafc}
tfoot td,tfoot th{font-weight:650;background:var(--soft)}
td pre{margin:0}
details{margin-top:.75rem}
.empty{padding:2rem 1rem;text-align:center;color:var(--muted)}
.empty strong{display:block;color:var(--ink);margin-bottom:.25rem}
.badge{display:inline-block;padding:.1rem .5rem;border-radius:999px;font-size:.8rem;font-weight:600;white-space:nowrap;background:#e2e8f0;color:#334155}
.badge.ok{background:var(--ok-bg);color:var(--ok)}.badge.warn{background:var(--warn-bg);color:var(--warn)}
.badge.bad{background:var(--bad-bg);color:var(--bad)}.badge.info{background:var(--info-bg);color:var(--info)}
.tabs{display:flex;flex-wrap:wrap;gap:.25rem;border-bottom:1px solid var(--line);margin-bottom:1rem;padding:0;list-style:none}
.tabs a{display:block;padding:.45rem .8rem;text-decoration:none;border-radius:6px 6px 0 0;color:var(--muted)}
.tabs a[aria-current=page]{color:var(--ink);font-weight:600;border:1px solid var(--line);border-bottom-color:var(--bg);margin-bottom:-1px;background:var(--bg)}
.btn,button{font:inherit;font-size:.925rem;border-radius:6px;padding:.45rem .9rem;border:1px solid var(--link);background:var(--link);color:#fff;cursor:pointer;text-decoration:none;display:inline-block;line-height:1.3}
.btn.secondary,button.secondary{background:#fff;color:var(--link)}
button:disabled{opacity:.45;cursor:not-allowed}
.btn.danger,button.danger{background:#b91c1c;border-color:#b91c1c}
button.small,.btn.small{padding:.2rem .55rem;font-size:.85rem}
.inline{display:inline}
.actions{display:flex;flex-wrap:wrap;gap:.4rem;align-items:center}
form.stack{display:grid;gap:.9rem;max-width:44rem}
.fields{display:grid;gap:.9rem;grid-template-columns:repeat(auto-fit,minmax(200px,1fr))}
fieldset{border:1px solid var(--line);border-radius:8px;padding:.75rem 1rem;margin:0}
legend{font-weight:600;padding:0 .3rem}
label{font-weight:600;display:block;margin-bottom:.2rem}
label.check{font-weight:400;display:flex;gap:.45rem;align-items:flex-start;margin:.2rem 0}
input,select,textarea{font:inherit;padding:.45rem .55rem;border:1px solid #64748b;border-radius:6px;width:100%;background:#fff;color:var(--ink)}
input:not([type=checkbox]),select{height:2.5rem}
input[type=checkbox]{width:auto;margin-top:.3rem}
input[aria-invalid=true],select[aria-invalid=true]{border-color:#b91c1c;border-width:2px}
.hint{color:var(--muted);font-size:.85rem;margin:.2rem 0 0}
.field-error{color:#b91c1c;font-size:.875rem;font-weight:600;margin:.2rem 0 0}
.filters{display:flex;flex-wrap:wrap;gap:.75rem;align-items:flex-end;background:#fff;border:1px solid var(--line);border-radius:10px;padding:.75rem 1rem;margin-bottom:1rem}
.filters>div{min-width:150px}
.copy{display:flex;gap:.4rem;align-items:center;max-width:48rem}
.inline-form{display:flex;flex-wrap:wrap;gap:.6rem;align-items:flex-end}
.row-form{display:flex;gap:.4rem;align-items:center}
.row-form input{width:11rem;height:2rem;padding:.25rem .45rem}
.bulkbar{display:flex;flex-wrap:wrap;gap:.75rem;align-items:flex-end;justify-content:space-between;margin-bottom:.75rem}
.filters a{margin-left:.5rem}
.copy input{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.85rem;min-width:18rem}
.secret{background:var(--warn-bg);border:1px solid #fcd34d;border-radius:10px;padding:1rem 1.25rem;margin-bottom:1.25rem}
.pager{display:flex;gap:.75rem;align-items:center;margin:.75rem 0}
pre{background:#0f172a;color:#e2e8f0;padding:.75rem;border-radius:8px;overflow:auto;max-height:22rem;font-size:.8rem;white-space:pre-wrap;word-break:break-all}
details summary{cursor:pointer;color:var(--link)}
dl.props{display:grid;grid-template-columns:max-content 1fr;gap:.35rem 1.25rem;margin:0}
dl.props dt{color:var(--muted)}dl.props dd{margin:0;word-break:break-all}
.chart{width:100%;height:auto;display:block}
.chart .grid-line{stroke:#e2e8f0}.chart .axis{fill:#475569;font-size:11px}
.chart .s0{fill:#2563eb}.chart .s1{fill:#c2410c}.chart .s2{fill:#15803d}
.legend{display:flex;gap:1rem;list-style:none;padding:0;margin:.25rem 0 .5rem;font-size:.875rem}
.legend span{display:inline-block;width:.8rem;height:.8rem;border-radius:2px;margin-right:.35rem;vertical-align:-1px}
.legend .s0{background:#2563eb}.legend .s1{background:#c2410c}.legend .s2{background:#15803d}
.login{max-width:24rem;margin:4rem auto;background:#fff;border:1px solid var(--line);border-radius:12px;padding:1.75rem}
.login h1{margin-top:0}
.visually-hidden{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
footer{max-width:1240px;margin:0 auto;padding:0 1.25rem 2rem;color:var(--muted);font-size:.85rem}
@media (max-width:700px){.cols{grid-template-columns:1fr}.user{margin-left:0}}
`;

const JS = `
'use strict';
(function () {
  function announce(text) {
    var live = document.getElementById('live');
    if (live) { live.textContent = ''; setTimeout(function () { live.textContent = text; }, 30); }
  }
  function copy(button) {
    var source = document.getElementById(button.getAttribute('data-copy'));
    if (!source) return;
    var text = source.value !== undefined ? source.value : source.textContent;
    var done = function () { var label = button.textContent; button.textContent = 'Copied'; announce('Copied to the clipboard');
      setTimeout(function () { button.textContent = label; }, 1500); };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, function () { fallback(source); done(); });
    } else { fallback(source); done(); }
  }
  function fallback(source) {
    if (source.select) { source.select(); try { document.execCommand('copy'); } catch (e) {} }
  }
  document.addEventListener('click', function (event) {
    var target = event.target instanceof Element ? event.target.closest('[data-copy]') : null;
    if (target) { event.preventDefault(); copy(target); }
  });
  document.addEventListener('submit', function (event) {
    var submitter = event.submitter;
    var message = (submitter && submitter.getAttribute('data-confirm')) || event.target.getAttribute('data-confirm');
    if (message && !window.confirm(message)) event.preventDefault();
  });
  document.addEventListener('change', function (event) {
    var box = event.target;
    if (!(box instanceof HTMLInputElement)) return;
    var form = box.form;
    if (!form) return;
    var boxes = form.querySelectorAll('input[type=checkbox][data-row]');
    if (box.hasAttribute('data-select-all')) {
      boxes.forEach(function (b) { b.checked = box.checked; });
    } else if (box.hasAttribute('data-row')) {
      var all = form.querySelector('input[data-select-all]');
      if (all) { var n = 0; boxes.forEach(function (b) { if (b.checked) n++; });
        all.checked = n === boxes.length; all.indeterminate = n > 0 && n < boxes.length; }
    }
    var selected = form.querySelectorAll('input[type=checkbox][data-row]:checked').length;
    form.querySelectorAll('[data-needs-selection]').forEach(function (b) { b.disabled = selected === 0; });
    var counter = form.querySelector('[data-selection-count]');
    if (counter) counter.textContent = selected + ' selected';
  });
  document.querySelectorAll('[data-copy]').forEach(function (b) { b.hidden = false; });
  document.querySelectorAll('[data-needs-selection]').forEach(function (b) { b.disabled = true; });
})();
`;

const ICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#0f172a"/><path d="M8 23 14 9h4l6 14h-4l-1.3-3.3h-5.5L12 23zm5.3-6.4h3.4L15 12.3z" fill="#fff"/></svg>`;

function asset(body: string, type: string) {
  const hash = createHash('sha256').update(body).digest('hex').slice(0, 12);
  return { body, type, hash };
}

/** A Map, not an object: a name such as `__proto__` or `constructor` must find nothing. */
export const ASSETS: ReadonlyMap<string, { body: string; type: string; hash: string }> = new Map([
  ['app.css', asset(CSS.trim(), 'text/css; charset=utf-8')],
  ['app.js', asset(JS.trim(), 'text/javascript; charset=utf-8')],
  ['icon.svg', asset(ICON, 'image/svg+xml')],
]);

/** URL of an asset with its content hash, so a new release is fetched at once. */
export function assetUrl(name: 'app.css' | 'app.js' | 'icon.svg'): string {
  return `/dashboard/assets/${name}?v=${ASSETS.get(name)?.hash ?? ''}`;
}
