// The dashboard's only script (a module: strict and deferred). Every page works without it;
// it adds copy buttons, confirmation prompts and "select all" for bulk decisions.

function announce(text) {
  const live = document.getElementById('live');
  if (!live) return;
  live.textContent = '';
  setTimeout(() => {
    live.textContent = text;
  }, 30);
}

function selectText(source) {
  if (!source.select) return;
  source.select();
  try {
    document.execCommand('copy');
  } catch {
    // Nothing more to try: the text stays selected for the user to copy.
  }
}

function copy(button) {
  const source = document.getElementById(button.getAttribute('data-copy'));
  if (!source) return;
  const text = source.value !== undefined ? source.value : source.textContent;
  const done = () => {
    const label = button.textContent;
    const name = button.getAttribute('aria-label');
    button.textContent = 'Copied';
    if (name) button.setAttribute('aria-label', 'Copied');
    announce('Copied to the clipboard');
    setTimeout(() => {
      button.textContent = label;
      if (name) button.setAttribute('aria-label', name);
    }, 1500);
  };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(text).then(done, () => {
      selectText(source);
      done();
    });
  } else {
    selectText(source);
    done();
  }
}

document.addEventListener('click', (event) => {
  const target = event.target instanceof Element ? event.target.closest('[data-copy]') : null;
  if (target) {
    event.preventDefault();
    copy(target);
  }
});

document.addEventListener('submit', (event) => {
  const submitter = event.submitter;
  // The button only Enter reaches (see the conversions list): nothing to post, keep the ticks.
  if (submitter?.hasAttribute('data-enter-only')) {
    event.preventDefault();
    return;
  }
  const message = submitter?.getAttribute('data-confirm') || event.target.getAttribute('data-confirm');
  if (message && !window.confirm(message)) event.preventDefault();
});

document.addEventListener('change', (event) => {
  const box = event.target;
  // Only the selection boxes: typing a reason must not rewrite the counter (and move the rows).
  if (!(box instanceof HTMLInputElement) || box.type !== 'checkbox' || !box.form) return;
  const form = box.form;
  const boxes = form.querySelectorAll('input[type=checkbox][data-row]');
  if (box.hasAttribute('data-select-all')) {
    for (const b of boxes) b.checked = box.checked;
  } else if (box.hasAttribute('data-row')) {
    const all = form.querySelector('input[data-select-all]');
    if (all) {
      const ticked = [...boxes].filter((b) => b.checked).length;
      all.checked = ticked === boxes.length;
      all.indeterminate = ticked > 0 && ticked < boxes.length;
    }
  }
  const selected = form.querySelectorAll('input[type=checkbox][data-row]:checked').length;
  for (const b of form.querySelectorAll('[data-needs-selection]')) b.disabled = selected === 0;
  const counter = form.querySelector('[data-selection-count]');
  if (counter) counter.textContent = `${selected} selected`;
});

// A refused form's error summary has `autofocus`; a browser that honours it on fields only
// still moves the focus there.
const summary = document.getElementById('error-summary');
if (summary && document.activeElement === document.body) summary.focus();

for (const b of document.querySelectorAll('[data-copy]')) b.hidden = false;
for (const b of document.querySelectorAll('[data-needs-selection]')) b.disabled = true;
