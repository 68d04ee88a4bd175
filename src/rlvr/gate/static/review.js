// The review page's keyboard shortcuts (the forms work without them).
const form = document.getElementById('verdict');
const note = document.getElementById('note');
function submitLabel(label, accept) {
  if (!form) return;
  if (accept && !note.value.trim()) {
    note.focus();
    note.placeholder = 'write why this disagreement is acceptable, then press Esc and a';
    return;
  }
  form.querySelector('input[name=label]').value = label;
  form.querySelector('input[name=accept]').value = accept ? '1' : '';
  form.submit();
}
function toggleHelp() {
  const h = document.getElementById('help');
  h.style.display = h.style.display === 'block' ? 'none' : 'block';
}
document.addEventListener('keydown', (e) => {
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  const t = e.target;
  if (t && (t.tagName === 'TEXTAREA' || t.tagName === 'INPUT' || t.tagName === 'SELECT')) {
    if (e.key === 'Escape') { t.blur(); e.preventDefault(); }
    return;
  }
  const go = (sel) => { const a = document.querySelector(sel); if (a) { window.location = a.href; } };
  switch (e.key) {
    case 'r': submitLabel('right', false); break;
    case 'h': submitLabel('higher', false); break;
    case 'l': submitLabel('lower', false); break;
    case 'a': if (form && form.dataset.disagreement) submitLabel(form.dataset.disagreement, true); break;
    case 'n': if (note) { note.focus(); e.preventDefault(); } break;
    case 'j': case 'ArrowRight': go('#next'); break;
    case 'k': case 'ArrowLeft': go('#prev'); break;
    case '1': go('#show-todo'); break;
    case '2': go('#show-open'); break;
    case '3': go('#show-unreviewed'); break;
    case '4': go('#show-all'); break;
    case 's': go('#status'); break;
    case 'f': { const f = document.querySelector('#filter select'); if (f) { f.focus(); e.preventDefault(); } } break;
    case '?': toggleHelp(); break;
    default: return;
  }
});
