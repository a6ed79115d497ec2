// KEET web UI: talks to /api/v1 only; every outside string reaches the page
// through textContent (never innerHTML), and the HTML report runs in a
// sandboxed frame without scripts. Each job and comparison has a route in the
// URL's fragment (#/job/ID, #/compare/BEFORE/AFTER?pairs=I:J,...): Back and
// Forward move between them and a copied link shows the same thing.
'use strict';

const $ = (id) => document.getElementById(id);
let info = {};
let selected = null;
let stream = null;
let lastJobs = [];

function token() { return sessionStorage.getItem('keet-token') || ''; }

async function api(path, options = {}) {
  const headers = Object.assign({}, options.headers || {});
  if (token()) headers['Authorization'] = 'Bearer ' + token();
  const res = await fetch(path, Object.assign({}, options, { headers }));
  if (res.status === 401) $('token-box').hidden = false;
  return res;
}

async function apiJson(path, options) {
  const res = await api(path, options);
  const text = await res.text();
  let body = null;
  try { body = text ? JSON.parse(text) : null; } catch (e) { body = null; }
  if (!res.ok) throw new Error((body && body.error) || (res.status + ' ' + res.statusText));
  return body;
}

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function row(cells) {
  const tr = document.createElement('tr');
  for (const c of cells) {
    const td = document.createElement('td');
    if (c instanceof Node) td.appendChild(c); else td.textContent = c === undefined || c === null ? '' : String(c);
    tr.appendChild(td);
  }
  return tr;
}

function duration(ns) {
  if (ns === null || ns === undefined) return '';
  if (ns >= 1e6) return (ns / 1e6).toFixed(2) + ' ms';
  if (ns >= 1e3) return (ns / 1e3).toFixed(2) + ' us';
  return ns.toFixed(0) + ' ns';
}

// --- upload -----------------------------------------------------------------
async function upload(file) {
  $('upload-status').textContent = 'Uploading ' + file.name + '…';
  const params = new URLSearchParams({ name: file.name });
  if ($('baseline').value.trim()) params.set('baseline', $('baseline').value.trim());
  try {
    const job = await apiJson('/api/v1/jobs?' + params, {
      method: 'POST', headers: { 'Content-Type': 'application/octet-stream' }, body: file });
    $('upload-status').textContent = 'Queued as job ' + job.id.slice(0, 8);
    await refreshJobs();
    go(jobRoute(job.id));
  } catch (e) {
    $('upload-status').textContent = 'Upload failed: ' + e.message;
  }
}

function setupDrop() {
  const drop = $('drop');
  drop.addEventListener('dragover', (e) => { e.preventDefault(); drop.classList.add('over'); });
  drop.addEventListener('dragleave', () => drop.classList.remove('over'));
  drop.addEventListener('drop', (e) => {
    e.preventDefault();
    drop.classList.remove('over');
    for (const f of e.dataTransfer.files) upload(f);
  });
  $('file').addEventListener('change', (e) => { for (const f of e.target.files) upload(f); e.target.value = ''; });
}

// --- job list ---------------------------------------------------------------
function progressCell(job) {
  if (job.state === 'queued' || job.state === 'running') {
    const p = el('progress');
    p.max = 1;
    p.value = job.progress || 0;
    p.title = job.stage || job.state;
    return p;
  }
  return el('span', job.state === 'done' ? '✓' : '');
}

// The report's name; a failed job says why under it, in full: the error is
// what the user does next (an .nsys-rep with no nsys on the server asks for
// its SQLite export), so it is not left to a tooltip.
function nameCell(job) {
  const cell = el('div', (job.kind === 'diff' ? '⇄ ' : '') + job.name);
  if (job.state === 'failed' && job.error) cell.appendChild(el('div', job.error, 'job-error'));
  return cell;
}

function deleteButton(job) {
  const b = el('button', job.state === 'queued' || job.state === 'running' ? 'cancel' : 'delete');
  b.addEventListener('click', async (e) => {
    e.stopPropagation();
    if (job.state === 'queued' || job.state === 'running') await api('/api/v1/jobs/' + job.id + '/cancel', { method: 'POST' });
    else await api('/api/v1/jobs/' + job.id, { method: 'DELETE' });
    refreshJobs();
  });
  return b;
}

// The done analyses (not timelines, not comparisons), newest first. Untouched,
// "after" starts on the newest and "before" on the one before it: a comparison
// starts from two different jobs.
function fillSelect(sel, jobs, nth) {
  const keep = sel.dataset.chosen ? sel.value : '';  // the user's choice outlives a refresh
  sel.replaceChildren();
  for (const j of jobs) {
    if (j.kind !== 'analyze' || j.state !== 'done') continue;
    const o = el('option', j.name + ' (' + j.id.slice(0, 8) + ')');
    o.value = j.id;
    sel.appendChild(o);
  }
  if (keep) sel.value = keep;
  else if (sel.options.length > nth) sel.selectedIndex = nth;
}

async function refreshJobs() {
  let body;
  try { body = await apiJson('/api/v1/jobs?limit=50'); } catch (e) { return; }
  lastJobs = body.jobs;
  const tbody = $('jobs').querySelector('tbody');
  tbody.replaceChildren();
  for (const job of body.jobs) {
    const state = el('span', job.state, 'state-' + job.state);
    if (job.error) state.title = job.error;
    const tr = row([nameCell(job), state, progressCell(job), deleteButton(job)]);
    tr.dataset.id = job.id;
    if (job.id === selected) tr.classList.add('selected');
    tr.addEventListener('click', () => go(jobRoute(job.id)));
    tbody.appendChild(tr);
  }
  fillSelect($('before'), body.jobs, 1);
  fillSelect($('after'), body.jobs, 0);
}

// --- one job ----------------------------------------------------------------
// "timeline · done", "analyze · running — html 50%": the kind first, so a
// run and a kernel report are told apart before their results load.
function showState(job) {
  let text = job.kind + ' · ' + job.state;
  if (job.state === 'running') text += ' — ' + (job.stage || '') + ' ' + Math.round((job.progress || 0) * 100) + '%';
  if (job.error) text += ': ' + job.error;
  $('detail-state').textContent = text;
  $('detail-state').className = 'state-' + job.state;
}

// Server-sent events through fetch (EventSource cannot send a bearer token).
async function follow(id) {
  if (stream) stream.abort();
  stream = new AbortController();
  const signal = stream.signal;
  try {
    const res = await api('/api/v1/jobs/' + id + '/events', { signal });
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buffer.indexOf('\n\n')) >= 0) {
        const event = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const data = event.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
        if (!data || !event.includes('event: status')) continue;
        const job = JSON.parse(data);
        if (id !== selected) return;
        showState(job);
        if (job.state === 'done') { refreshJobs(); showResult(job); }
        if (job.state === 'failed' || job.state === 'cancelled') refreshJobs();
      }
    }
  } catch (e) { /* aborted or connection closed */ }
}

// A value in its unit, readable: percentages to one decimal, durations and
// bytes scaled, other numbers to 4 significant digits (never more digits than
// the report holds).
function formatValue(v, unit) {
  if (typeof v !== 'number') return String(v);
  const u = unit || '';
  if (u === '%') return v.toFixed(1) + '%';
  if (/^(ns|nsecond)$/.test(u)) return duration(v);
  if (/^(byte|bytes)$/.test(u)) {
    const units = ['B', 'KB', 'MB', 'GB', 'TB'];
    let x = v, i = 0;
    while (Math.abs(x) >= 1000 && i < units.length - 1) { x /= 1000; i++; }
    return (i === 0 ? x.toFixed(0) : x.toFixed(2)) + ' ' + units[i];
  }
  const shown = Number.isInteger(v) ? v.toLocaleString('en-US') : String(+v.toPrecision(4));
  return shown + (u ? ' ' + u : '');
}

// Evidence as labelled values (the metric name in the tooltip).
function evidenceList(ev) {
  const ul = el('ul', null, 'evidence');
  for (const e of ev || []) {
    if (e.value === undefined || e.value === null) continue;
    const li = el('li', (e.label || e.metric) + ': ' + formatValue(e.value, e.unit));
    li.title = e.metric;
    ul.appendChild(li);
  }
  return ul;
}

function kernelDiagnosis(k, fold) {
  const box = el('div', null, 'kernel-diag');
  const launches = fold && fold.count > 1 ? ' ×' + fold.count + ' launches' : '';
  box.appendChild(el('h3', 'Kernel ' + k.index + ': ' + (k.demangled || k.name) + launches));
  if (fold && fold.count > 1 && fold.timed > 0)
    box.appendChild(el('p', 'median ' + duration(fold.median_ns) + ' (' + duration(fold.min_ns) + ' to ' +
      duration(fold.max_ns) + '), total ' + duration(fold.total_ns), 'meta'));
  if (k.bottleneck) {
    box.appendChild(el('p', k.bottleneck.summary, 'bottleneck'));
    box.appendChild(evidenceList(k.bottleneck.evidence));
  }
  if (k.library) {
    box.appendChild(el('p', k.library + ' kernel: change how it is called, not its code', 'library'));
    const ul = el('ul');
    for (const a of k.library_advice || []) ul.appendChild(el('li', a));
    box.appendChild(ul);
  }
  for (const f of k.findings || []) {
    const d = el('div', null, 'finding');
    d.appendChild(el('h4', '[' + f.severity + '] ' + f.title + (f.estimated_speedup ? ' (est. ' + f.estimated_speedup.toFixed(2) + '×)' : '')));
    if (f.explanation) d.appendChild(el('p', f.explanation));
    const ul = el('ul');
    for (const a of f.advice || []) ul.appendChild(el('li', a));
    d.appendChild(ul);
    d.appendChild(evidenceList(f.evidence));
    box.appendChild(d);
  }
  return box;
}

// One row per group of identical launches (launch_folds: same kernel, grid and
// block, durations within noise), ranked by their total time; a document
// without folds ranks launches one by one.
function foldsOf(doc) {
  const byIndex = new Map((doc.kernels || []).map(k => [k.index, k]));
  const folds = doc.launch_folds || (doc.kernels || []).map(k => ({count: 1, representative: k.index, timed: k.duration_ns ? 1 : 0,
    total_ns: k.duration_ns, median_ns: k.duration_ns, min_ns: k.duration_ns, max_ns: k.duration_ns, indices: [k.index]}));
  return folds.filter(f => byIndex.has(f.representative)).map(f => ({fold: f, kernel: byIndex.get(f.representative)}))
    .sort((a, b) => (b.fold.total_ns || 0) - (a.fold.total_ns || 0));
}

function showAnalysis(doc) {
  const groups = foldsOf(doc);
  const tbody = $('ranking').querySelector('tbody');
  tbody.replaceChildren();
  for (const {fold, kernel: k} of groups) {
    const top = (k.findings || [])[0];
    const tr = row([k.index, k.demangled || k.name, fold.count, duration(fold.total_ns), k.bottleneck ? k.bottleneck.class : '',
      top ? top.title : '', top && top.estimated_speedup ? top.estimated_speedup.toFixed(2) + '×' : '']);
    tr.title = 'Show its diagnosis in the report below';
    tr.addEventListener('click', () => scrollToReport('k' + k.index));
    tbody.appendChild(tr);
  }
  $('ranking-box').hidden = false;
  const diag = $('diagnosis');
  diag.replaceChildren();
  for (const {fold, kernel} of groups.slice(0, 10)) diag.appendChild(kernelDiagnosis(kernel, fold));
}

// A whole run (keet.timeline/1): its verdicts, largest cost first; the
// picture of the run is in the HTML result below.
function showTimeline(doc) {
  $('ranking-box').hidden = true;
  const diag = $('diagnosis');
  diag.replaceChildren();
  const span = (doc.span || {}).duration_ns || 0;
  diag.appendChild(el('h3', 'Verdicts for the run'));
  const verdicts = doc.verdicts || [];
  if (!verdicts.length) diag.appendChild(el('p', 'No problem found by the run checks.', 'muted'));
  const list = el('ol');
  list.id = 'run-verdicts';
  for (const v of verdicts) {
    const item = el('li');
    item.appendChild(el('strong', v.title));
    if (typeof v.cost_ns === 'number' && span > 0)
      item.appendChild(el('span', ' Costs the run up to ' + duration(v.cost_ns) + ' (' +
        (100 * v.cost_ns / span).toFixed(1) + '% of its span).', 'muted'));
    if (v.explanation) item.appendChild(el('p', v.explanation));
    for (const c of v.commands || []) item.appendChild(el('pre', '$ ' + c));
    list.appendChild(item);
  }
  diag.appendChild(list);
}

// How keet diff made a pair (keet.diff/1 paired_by), in the words keet diff uses.
const PAIRED_BY = {
  name: 'name',
  forced: 'your pairs (--pair)',
  only_kernel: 'position: the only kernel of each report',
  launch_config_order: 'launch configuration and order',
  family: 'function family (other template arguments or library version)',
};

function pairedBy(p) {
  const b = p.before || {}, a = p.after || {};
  const how = PAIRED_BY[p.paired_by] || p.paired_by || 'name';
  return b.name !== a.name ? how + ': the kernel names differ' : how;
}

function pairText(pairs) { return pairs.map((p) => p[0] + ':' + p[1]).join(' '); }

// "0:1 2:3" (or with commas) -> [[0, 1], [2, 3]]; null when a word is not I:J.
function parsePairs(text) {
  const pairs = [];
  for (const word of text.split(/[\s,]+/).filter((w) => w)) {
    const m = /^(\d{1,9}):(\d{1,9})$/.exec(word);
    if (!m) return null;
    pairs.push([Number(m[1]), Number(m[2])]);
  }
  return pairs;
}

function unpairedList(title, kernels) {
  const box = el('div');
  box.appendChild(el('h4', title));
  const ul = el('ul');
  for (const k of kernels) ul.appendChild(el('li', '#' + k.index + ' ' + k.name + ' (grid ' + (k.grid || []).join('×') +
    ', block ' + (k.block || []).join('×') + ')'));
  box.appendChild(ul);
  return box;
}

function showDiff(doc) {
  $('ranking-box').hidden = true;
  const diag = $('diagnosis');
  diag.replaceChildren();
  diag.appendChild(el('h3', 'Before / after'));
  const t = el('table');
  t.id = 'diff-pairs';
  t.appendChild(row(['kernel', 'paired by', 'before', 'after', 'verdict', 'speedup', 'resolved', 'introduced']));
  for (const p of doc.pairs || []) {
    const b = p.before || {}, a = p.after || {};
    const name = b.name === a.name ? a.name : '#' + b.index + ' ' + b.name + ' → #' + a.index + ' ' + a.name;
    t.appendChild(row([name, pairedBy(p), duration(b.duration_ns), duration(a.duration_ns), p.verdict,
      typeof p.speedup === 'number' ? p.speedup.toFixed(2) + '×' : '', (p.resolved || []).join(', '), (p.introduced || []).join(', ')]));
  }
  diag.appendChild(t);
  const before = doc.unmatched_before || [], after = doc.unmatched_after || [];
  if (before.length) diag.appendChild(unpairedList('Only in before (missing)', before));
  if (after.length) diag.appendChild(unpairedList('Only in after (new)', after));
  const suggested = doc.suggested_pairs || [];
  if (suggested.length) {
    const hint = el('p', 'If one of these is another kernel renamed, pair them by index (before:after), e.g. ' +
      pairText(suggested) + ' ', 'muted');
    hint.id = 'pair-hint';
    const use = el('button', 'use these pairs');
    use.addEventListener('click', () => { $('pairs').value = pairText(suggested); $('pairs').focus(); });
    hint.appendChild(use);
    diag.appendChild(hint);
  }
}

function resultLinks(job) {
  const box = $('links');
  box.replaceChildren();
  box.appendChild(el('span', 'Download: '));
  for (const f of job.results || []) {
    const a = el('a', f);
    a.href = '#';
    a.addEventListener('click', async (e) => {
      e.preventDefault();
      const res = await api('/api/v1/jobs/' + job.id + '/result?format=' + f);
      const blob = await res.blob();
      const url = URL.createObjectURL(blob);
      const link = document.createElement('a');
      link.href = url;
      link.download = job.name + '.' + (f === 'markdown' ? 'md' : f === 'sarif' ? 'sarif' : f);
      link.click();
      URL.revokeObjectURL(url);
    });
    box.appendChild(a);
    box.appendChild(document.createTextNode(' '));
  }
}

// --- the HTML report, in the page ----------------------------------------------
// The frame is as tall as its document, so the page scrolls once, never a page
// inside the page. To measure it the frame is same-origin (sandbox
// "allow-same-origin") but still runs no script: no "allow-scripts" in the
// sandbox, the page's own policy (script-src 'self') admits no inline script,
// and the report gets the policy the API serves it with (nothing but inline
// styles and data: images). Only this page's script reads the frame.
const REPORT_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";
// The report's own ranking is by kernel name; the page ranks by fold (above),
// as the report's diagnoses are folded: one ranking, so the report's is left out.
const REPORT_STYLE = '#kernel-ranking{display:none}html{overflow-y:hidden}';

function embeddedReport(html) {
  const head = '<meta http-equiv="Content-Security-Policy" content="' + REPORT_POLICY + '"><style>' + REPORT_STYLE + '</style>';
  const at = html.search(/<head(\s[^>]*)?>/i);  // not <header>
  if (at < 0) return head + html;
  const end = html.indexOf('>', at) + 1;
  return html.slice(0, end) + head + html.slice(end);
}

function reportDocument() {
  try { return $('report').contentDocument; } catch (e) { return null; }
}

// Called on load and every half second: a <details> opened in the report or
// a narrower window changes its height, and the frame can tell no one.
function fitReport() {
  const doc = reportDocument();
  if (!doc || !doc.documentElement || $('detail').hidden) return;
  const height = doc.documentElement.scrollHeight;
  if (Math.abs($('report').clientHeight - height) > 1) $('report').style.height = height + 'px';
}

// A kernel's section of the report, scrolled to in the page (the frame has
// no scroll of its own); the report's table of contents links do the same.
function scrollToReport(id) {
  const doc = reportDocument();
  const target = doc && doc.getElementById(id);
  if (!target) return;
  const top = $('report').getBoundingClientRect().top + target.getBoundingClientRect().top + window.scrollY;
  window.scrollTo({ top: top - 8, behavior: 'smooth' });
}

function reportLoaded() {
  fitReport();
  const doc = reportDocument();
  if (!doc) return;
  doc.addEventListener('click', (e) => {
    const a = e.target.closest && e.target.closest('a[href^="#"]');
    if (!a) return;
    e.preventDefault();
    scrollToReport(a.getAttribute('href').slice(1));
  });
}

async function showResult(job) {
  try {
    const doc = await apiJson('/api/v1/jobs/' + job.id + '/result?format=json');
    const run = job.kind === 'timeline' || doc.schema === 'keet.timeline/1';
    if (job.kind === 'diff') showDiff(doc); else if (run) showTimeline(doc); else showAnalysis(doc);
    const html = await (await api('/api/v1/jobs/' + job.id + '/result?format=html')).text();
    if (job.id !== selected) return;
    $('report').srcdoc = embeddedReport(html);
    resultLinks(job);
    $('ask-box').hidden = !(info.llm && job.kind === 'analyze' && !run);
  } catch (e) {
    $('detail-state').textContent = 'Cannot read the result: ' + e.message;
  }
}

async function select(id) {
  selected = id;
  for (const tr of $('jobs').querySelectorAll('tbody tr')) tr.classList.toggle('selected', tr.dataset.id === id);
  $('empty').hidden = true;
  $('detail').hidden = false;
  $('diagnosis').replaceChildren();
  $('ranking').querySelector('tbody').replaceChildren();
  $('answer').textContent = '';
  $('report').srcdoc = '';
  $('report').style.height = '';
  $('ask-box').hidden = true;
  let job;
  try { job = await apiJson('/api/v1/jobs/' + id); } catch (e) {
    $('detail-title').textContent = 'Job ' + id.slice(0, 8);
    $('detail-state').textContent = 'Cannot show this job: ' + e.message;
    $('detail-state').className = 'state-failed';
    return;
  }
  if (id !== selected) return;
  $('detail-title').textContent = job.name + (job.pairs ? ' (pairs ' + pairText(job.pairs) + ')' : '');
  showState(job);
  if (job.state === 'done') showResult(job);
  else if (job.state === 'queued' || job.state === 'running') follow(id);
}

// --- compare, history, questions ------------------------------------------
async function compare() {
  const before = $('before').value, after = $('after').value;
  if (!before || !after) return;
  if (before === after) {
    $('upload-status').textContent = 'Compare: choose two different reports (a report against itself changes nothing)';
    return;
  }
  const pairs = parsePairs($('pairs').value);
  if (!pairs) { $('upload-status').textContent = 'Compare: pairs are before:after kernel indices, e.g. 0:1 2:3'; return; }
  $('upload-status').textContent = '';
  go(compareRoute(before, after, pairs));
}

// The comparison of a #/compare route: the server answers the diff job it
// already has for these reports and pairs (a link opened again queues nothing).
async function showComparison(before, after, pairs) {
  for (const [id, value] of [['before', before], ['after', after]]) {
    $(id).value = value;
    $(id).dataset.chosen = '1';  // the route's choice outlives the list's refresh
  }
  $('pairs').value = pairText(pairs);
  const request = { before, after };
  if (pairs.length) request.pairs = pairs;
  selected = null;
  try {
    const job = await apiJson('/api/v1/diff', { method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(request) });
    refreshJobs();
    select(job.id);
  } catch (e) {
    $('empty').hidden = true;
    $('detail').hidden = false;
    $('diagnosis').replaceChildren();
    $('detail-title').textContent = 'Compare';
    $('detail-state').textContent = 'Cannot compare: ' + e.message;
    $('detail-state').className = 'state-failed';
  }
}

// --- routes -------------------------------------------------------------------
// In the fragment, not in the path: the server serves one page, so a link
// needs no route of its own there, and the fragment stays out of its logs.
function jobRoute(id) { return '#/job/' + encodeURIComponent(id); }

function compareRoute(before, after, pairs) {
  const query = pairs.length ? '?pairs=' + pairs.map((p) => p[0] + ':' + p[1]).join(',') : '';
  return '#/compare/' + encodeURIComponent(before) + '/' + encodeURIComponent(after) + query;
}

// A new history entry; the same route again shows it again.
function go(hash) {
  if (location.hash === hash) route(); else location.hash = hash;
}

function route() {
  const m = /^#\/(job|compare)\/([^/?]+)(?:\/([^/?]+))?(?:\?pairs=([0-9:,]*))?$/.exec(location.hash);
  if (!m) return;
  const id = decodeURIComponent(m[2]);
  if (m[1] === 'job') { select(id); return; }
  if (!m[3]) return;
  const pairs = parsePairs(m[4] || '');
  showComparison(id, decodeURIComponent(m[3]), pairs || []);
}

async function history() {
  const tbody = $('history').querySelector('tbody');
  tbody.replaceChildren();
  const params = new URLSearchParams();
  if ($('history-tag').value.trim()) params.set('tag', $('history-tag').value.trim());
  try {
    const doc = await apiJson('/api/v1/history?' + params);
    for (const k of doc.kernels || [])
      for (const p of k.points || []) tbody.appendChild(row([k.kernel, '#' + p.run, p.tag, duration(p.kernel && p.kernel.duration_ns)]));
    if (!tbody.children.length) tbody.appendChild(row(['no recorded runs', '', '', '']));
  } catch (e) { tbody.appendChild(row(['history unavailable: ' + e.message, '', '', ''])); }
}

async function ask() {
  const question = $('question').value.trim();
  if (!question || !selected) return;
  $('answer').textContent = 'Asking…';
  try {
    const doc = await apiJson('/api/v1/jobs/' + selected + '/ask', { method: 'POST',
      headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ question }) });
    const llm = doc.llm || {};
    $('answer').textContent = (llm.text || '') + (llm.status ? '\n\n[' + llm.status + ']' : '');
  } catch (e) { $('answer').textContent = 'No answer: ' + e.message; }
}

async function start() {
  $('token').value = token();
  $('token').addEventListener('change', () => { sessionStorage.setItem('keet-token', $('token').value); refreshJobs(); });
  setupDrop();
  $('compare-go').addEventListener('click', compare);
  for (const id of ['before', 'after']) $(id).addEventListener('change', () => { $(id).dataset.chosen = '1'; });
  $('history-go').addEventListener('click', history);
  $('ask-go').addEventListener('click', ask);
  try {
    info = await apiJson('/api/v1/info');
    $('server-info').textContent = 'keet ' + info.version + ' · ' + info.store + ' · ' + info.workers + ' workers' + (info.llm ? ' · LLM' : '');
    if (info.auth) $('token-box').hidden = false;
  } catch (e) { $('server-info').textContent = e.message; }
  $('report').addEventListener('load', reportLoaded);
  setInterval(fitReport, 500);
  window.addEventListener('hashchange', route);
  await refreshJobs();
  route();
  setInterval(refreshJobs, 2000);
}

document.addEventListener('DOMContentLoaded', start);
