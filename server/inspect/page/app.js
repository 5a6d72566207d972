// The dynamic-mcp inspector: the hub's traffic, upstreams and client
// sessions, live. No framework and no build step: the hub embeds this file
// as it is. The bearer token is kept in this tab's sessionStorage and sent
// in the Authorization header, never in a URL; EventSource cannot send
// headers, so the event stream is read with fetch() and a ReadableStream.
// The page first tries without a token: a hub that needs none (serve
// --http --insecure-no-auth) is shown at once; one that does answers 401,
// and only then is the token asked for.
'use strict';

const TOKEN_KEY = 'dynamic-mcp-inspector-token';
const $ = (sel) => document.querySelector(sel);

const state = {
  token: sessionStorage.getItem(TOKEN_KEY) || '',
  rows: [],            // oldest first
  bySeq: new Map(),
  max: 1000,           // the hub's history size, from its hello
  open: new Set(),     // seqs of the rows opened
  paused: false,
  frozen: [],          // the rows shown while paused: those there when it paused
  unseen: 0,           // events while paused
  tab: 'traffic',
  stream: null,        // the AbortController of the event stream
  live: false,         // the API is being read: not waiting for a token
};

// ---- the token ----

function askToken(why) {
  state.live = false;
  state.token = '';
  sessionStorage.removeItem(TOKEN_KEY);
  const err = $('#login-error');
  err.textContent = why || '';
  err.hidden = !why;
  const dlg = $('#login');
  if (!dlg.open) dlg.showModal();
  $('#token').focus();
  showTokenHint();
}

// showTokenHint puts where the token is, for the way this hub was
// started, in the login dialog (the hub's own words; no token needed).
async function showTokenHint() {
  try {
    const res = await fetch('token-hint', { cache: 'no-store' });
    const text = res.ok ? (await res.text()).trim() : '';
    if (text) $('#login-hint').textContent = text;
  } catch (e) { /* the default text stays */ }
}

$('#login-form').addEventListener('submit', () => {
  state.token = $('#token').value.trim();
  $('#token').value = '';
  sessionStorage.setItem(TOKEN_KEY, state.token);
  start();
});

// api fetches a path of the inspector's API with the token. A refused
// token asks for another and throws.
async function api(path, init = {}) {
  const res = await fetch('api/' + path, {
    ...init, cache: 'no-store',
    headers: { ...(init.headers || {}), ...(state.token ? { Authorization: 'Bearer ' + state.token } : {}) },
  });
  if (res.status === 401) {
    askToken(state.token ? 'The hub refused that token.' : '');
    throw new Error('unauthorized');
  }
  if (res.status === 429) {
    askToken('Too many wrong tokens from this address: wait a minute.');
    throw new Error('rate limited');
  }
  if (!res.ok) throw new Error(path + ': HTTP ' + res.status);
  return res;
}

// ---- the event stream ----

function setConn(cls, text) {
  const c = $('#conn');
  c.className = 'conn ' + cls;
  c.textContent = text;
}

async function stream() {
  if (state.stream) state.stream.abort();
  const ctrl = new AbortController();
  state.stream = ctrl;
  let res;
  try {
    res = await api('events', { signal: ctrl.signal });
  } catch (e) {
    if (e.message === 'unauthorized' || e.message === 'rate limited' || ctrl.signal.aborted) return;
    setConn('off', 'disconnected');
    setTimeout(() => { if (state.stream === ctrl) stream(); }, 2000);
    return;
  }
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += value;
      let k;
      while ((k = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, k);
        buf = buf.slice(k + 2);
        dispatch(block);
      }
    }
  } catch (e) {
    // the stream broke: reconnect below
  }
  if (state.stream !== ctrl || ctrl.signal.aborted) return;
  setConn('off', 'disconnected');
  setTimeout(() => { if (state.stream === ctrl) stream(); }, 1000);
}

// dispatch handles one server-sent event.
function dispatch(block) {
  let name = 'message', data = '';
  for (const line of block.split('\n')) {
    if (line.startsWith('event: ')) name = line.slice(7);
    else if (line.startsWith('data: ')) data += line.slice(6);
  }
  if (!data) return;
  const ev = JSON.parse(data);
  switch (name) {
    case 'hello': // a new stream: the history follows
      state.max = ev.requests || state.max;
      state.rows = [];
      state.bySeq.clear();
      $('#lost').hidden = true;
      break;
    case 'live':
      setConn(state.paused ? 'paused' : 'live', state.paused ? 'paused' : 'live');
      break;
    case 'row':
      addRow(ev);
      break;
    case 'end': {
      const r = state.bySeq.get(ev.seq);
      if (r) for (const [k, v] of Object.entries(ev)) if (k !== 'hops' && k !== 'messages' && k !== 'params') r[k] = v;
      break;
    }
    case 'hop': {
      const r = state.bySeq.get(ev.seq);
      if (r) (r.hops = r.hops || []).push(ev.hop);
      break;
    }
    case 'msg': {
      const r = state.bySeq.get(ev.seq);
      if (r) (r.messages = r.messages || []).push(ev.message);
      break;
    }
    case 'clear':
      state.rows = [];
      state.frozen = [];
      state.bySeq.clear();
      state.open.clear();
      break;
    case 'lost': {
      // The page fell behind and the hub dropped events for it: start
      // again from the history rather than show rows half updated.
      const lost = $('#lost');
      lost.textContent = ev.lost + ' events were lost while this page fell behind; reloaded from the history.';
      lost.hidden = false;
      stream();
      return;
    }
  }
  if (state.paused && name !== 'hello') {
    state.unseen++;
    $('#paused-note').textContent = state.unseen + ' new';
    return;
  }
  schedule();
}

function addRow(r) {
  state.rows.push(r);
  state.bySeq.set(r.seq, r);
  while (state.rows.length > state.max) {
    const old = state.rows.shift();
    state.bySeq.delete(old.seq);
    state.open.delete(old.seq);
  }
}

// ---- rendering ----

let pending = false;
function schedule() {
  if (pending) return;
  pending = true;
  requestAnimationFrame(() => { pending = false; render(); });
}

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = text;
  return e;
}

function badge(text, kind) {
  return el('span', 'badge s-' + (kind || text), text);
}

function groupOf(r) {
  return r.group || (r.server || '').split('/')[0] || '';
}

function size(r) {
  return (r.params ? r.params.size : 0) + (r.result ? r.result.size : 0) +
    (r.kind === 'message' ? r.messages.reduce((n, m) => n + (m.params ? m.params.size : 0), 0) : 0);
}

function fmtSize(n) {
  if (n < 1024) return n + ' B';
  if (n < 1 << 20) return (n / 1024).toFixed(1) + ' KiB';
  return (n / (1 << 20)).toFixed(1) + ' MiB';
}

function fmtTime(t) {
  const d = new Date(t);
  return d.toLocaleTimeString([], { hour12: false }) + '.' + String(d.getMilliseconds()).padStart(3, '0');
}

function fmtAgo(t) {
  if (!t) return '';
  let s = Math.max(0, Math.round((Date.now() - new Date(t)) / 1000));
  const h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60;
  s %= 60;
  return h ? h + 'h ' + m + 'm' : m ? m + 'm ' + s + 's' : s + 's';
}

function shortSession(s) {
  return s && s.length > 10 ? s.slice(0, 8) + '…' : (s || '');
}

function matches(r, f) {
  if (f.session && r.session !== f.session) return false;
  if (f.group && groupOf(r) !== f.group) return false;
  if (f.method && r.method !== f.method) return false;
  if (f.status && r.status !== f.status) return false;
  if (f.text) {
    const hay = [r.method, r.target, r.group, r.server, r.rule, r.action, r.session, r.status,
      r.params && r.params.text, r.result && r.result.text, r.error && r.error.message,
      ...(r.hops || []).map((h) => h.server + ' ' + (h.result ? h.result.text : '') + ' ' + (h.error ? h.error.message : '')),
      ...(r.messages || []).map((m) => m.method + ' ' + (m.params ? m.params.text : ''))].join('\n').toLowerCase();
    if (!hay.includes(f.text)) return false;
  }
  return true;
}

function filters() {
  return {
    session: $('#f-session').value, group: $('#f-group').value, method: $('#f-method').value,
    status: $('#f-status').value, text: $('#f-text').value.trim().toLowerCase(),
  };
}

// fillSelect keeps a filter's options to the values seen, and its choice.
function fillSelect(sel, values, label) {
  const cur = sel.value;
  const want = [...values].filter(Boolean).sort();
  const have = [...sel.options].slice(1).map((o) => o.value);
  if (want.join('\n') === have.join('\n')) return;
  sel.replaceChildren(el('option', null, label));
  sel.options[0].value = '';
  for (const v of want) {
    const o = el('option', null, label === 'all sessions' ? shortSession(v) : v);
    o.value = v;
    sel.append(o);
  }
  sel.value = want.includes(cur) ? cur : '';
}

// render draws the traffic table. While paused it draws the rows there
// were when it paused, so that opening a row or changing a filter does
// not bring in the rows that came since.
function render() {
  const rows = state.paused ? state.frozen : state.rows;
  fillSelect($('#f-session'), new Set(rows.map((r) => r.session)), 'all sessions');
  fillSelect($('#f-group'), new Set(rows.map(groupOf)), 'all groups');
  fillSelect($('#f-method'), new Set(rows.map((r) => r.method)), 'all methods');
  const f = filters();
  const body = document.createDocumentFragment();
  let shown = 0;
  for (let i = rows.length - 1; i >= 0; i--) { // newest first
    const r = rows[i];
    if (!matches(r, f)) continue;
    shown++;
    body.append(rowLine(r));
    if (state.open.has(r.seq)) body.append(detail(r));
  }
  $('#rows tbody').replaceChildren(body);
  $('#empty').hidden = shown > 0;
  $('#count-traffic').textContent = rows.length;
}

function rowLine(r) {
  const tr = el('tr', 'row ' + r.kind + (state.open.has(r.seq) ? ' open' : ''));
  tr.dataset.seq = r.seq;
  tr.dataset.method = r.method;
  tr.dataset.status = r.status;
  tr.dataset.group = groupOf(r);
  tr.dataset.target = r.target || '';
  const msg = r.kind === 'message' ? r.messages[0] : null;
  const upstream = msg ? (msg.server || '') : [...new Set((r.hops || []).map((h) => h.server))].join(', ');
  const policy = el('td', 'policy');
  if (r.action) {
    policy.append(badge(r.action));
    policy.append(' ' + (r.rule || 'default'));
  }
  const status = el('td', 'status');
  status.append(badge(r.status === 'pending' ? '…' : r.status, r.status));
  if (msg) status.append(' ' + msg.direction.replace('_', ' '));
  tr.append(
    el('td', null, fmtTime(r.start)),
    el('td', null, r.transport === 'stdio' ? 'stdio' : shortSession(r.session)),
    el('td', 'method', r.method),
    el('td', 'group', groupOf(r)),
    el('td', 'target', r.target || ''),
    status, policy,
    el('td', 'upstream', upstream),
    el('td', 'num', r.status === 'pending' ? '' : (r.ms || 0).toFixed(1)),
    el('td', 'num', fmtSize(size(r))));
  tr.title = r.error ? r.error.message : '';
  return tr;
}

$('#rows tbody').addEventListener('click', (e) => {
  const tr = e.target.closest('tr.row');
  if (!tr) return;
  const seq = Number(tr.dataset.seq);
  if (state.open.has(seq)) state.open.delete(seq); else state.open.add(seq);
  render();
});

function part(title, meta) {
  const d = el('div', 'part');
  d.append(el('h3', null, title));
  if (meta) d.append(el('div', 'meta', meta));
  return d;
}

// jsonBlock shows a kept body pretty-printed, or a placeholder.
function jsonBlock(b, what) {
  const pre = el('pre', 'json');
  if (!b) {
    pre.textContent = 'no ' + what;
    return pre;
  }
  pretty(b.text, pre);
  if (b.truncated) {
    const d = el('div');
    d.append(pre, el('span', 'trunc', 'truncated: ' + fmtSize(b.text.length) + ' of ' + fmtSize(b.size) + ' kept'));
    return d;
  }
  return pre;
}

function errorBlock(e) {
  const text = JSON.stringify({ code: e.code || undefined, message: e.message });
  const b = { text: e.data ? text.slice(0, -1) + ',"data":' + e.data.text + '}' : text, size: 0 };
  const pre = jsonBlock(b, 'error');
  pre.classList.add('error');
  return pre;
}

function detail(r) {
  const tr = el('tr', 'detail');
  const td = el('td');
  td.colSpan = 10;
  tr.append(td);
  if (r.kind === 'message') {
    for (const m of r.messages) td.append(messagePart(m));
    return tr;
  }
  const req = part('Request', 'id ' + (r.id || '–') + ' · session ' + (r.session || '–') + (r.user ? ' · user ' + r.user : '') + ' · ' + (r.transport || '') +
    (r.protocol ? ' · protocol ' + r.protocol : ''));
  req.append(jsonBlock(r.params, 'params'));
  td.append(req);
  if (r.action) {
    const p = part('Policy decision');
    p.append(badge(r.action), ' rule ' + (r.rule || '(default)'));
    td.append(p);
  }
  for (const h of r.hops || []) {
    const d = el('div', 'hop');
    d.append(el('div', 'meta', '→ ' + h.group + '/' + h.server + ' · ' + h.method + ' · ' + (h.transport || '') +
      (h.protocol ? ' · protocol ' + h.protocol : '') + ' · ' + h.ms.toFixed(1) + ' ms'));
    const pair = el('div', 'pair');
    pair.append(jsonBlock(h.params, 'params'), h.error ? errorBlock(h.error) : jsonBlock(h.result, 'result'));
    d.append(pair);
    td.append(d);
  }
  for (const m of r.messages || []) td.append(messagePart(m));
  if (r.omitted) td.append(el('p', 'note', r.omitted + ' more hops and messages were not kept'));
  const ans = part('Answer', r.status === 'pending' ? 'not answered yet' : r.status + ' · ' + (r.ms || 0).toFixed(1) + ' ms');
  if (r.error) ans.append(errorBlock(r.error));
  else if (r.status !== 'pending') ans.append(jsonBlock(r.result, 'result'));
  td.append(ans);
  return tr;
}

function messagePart(m) {
  const d = el('div', 'msg');
  d.append(el('div', 'meta', m.direction.replace('_', ' ') + ' · ' + (m.request ? 'request ' : '') + m.method +
    (m.server ? ' · ' + m.server : '') +
    (m.request && m.ms ? ' · ' + m.ms.toFixed(1) + ' ms' : '')));
  if (m.request) {
    const pair = el('div', 'pair');
    pair.append(jsonBlock(m.params, 'params'), m.error ? errorBlock(m.error) : jsonBlock(m.result, 'result'));
    d.append(pair);
  } else {
    d.append(jsonBlock(m.params, 'params'));
  }
  return d;
}

// pretty writes JSON text into pre, indented and coloured. It reads the
// text itself rather than JSON.parse, so that big numbers keep every digit
// and a body cut at the size cap still shows as far as it goes.
function pretty(text, pre) {
  const n = text.length;
  let i = 0, depth = 0, line = '';
  const out = [];
  const flushText = () => { if (line) { out.push(document.createTextNode(line)); line = ''; } };
  const put = (cls, s) => { flushText(); out.push(el('span', cls, s)); };
  const nl = () => { line += '\n' + '  '.repeat(depth); };
  const space = (c) => c === ' ' || c === '\n' || c === '\t' || c === '\r';
  while (i < n) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (j < n && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      j = Math.min(j + 1, n);
      let k = j;
      while (k < n && space(text[k])) k++;
      put(text[k] === ':' ? 'k' : 's', text.slice(i, j));
      i = j;
    } else if (c === '{' || c === '[') {
      let k = i + 1;
      while (k < n && space(text[k])) k++;
      if (text[k] === (c === '{' ? '}' : ']')) { line += c + text[k]; i = k + 1; continue; }
      depth++;
      line += c;
      nl();
      i++;
    } else if (c === '}' || c === ']') {
      depth = Math.max(0, depth - 1);
      nl();
      line += c;
      i++;
    } else if (c === ',') {
      line += ',';
      nl();
      i++;
    } else if (c === ':') {
      line += ': ';
      i++;
    } else if (space(c)) {
      i++;
    } else {
      let j = i;
      while (j < n && !space(text[j]) && !',:[]{}"'.includes(text[j])) j++;
      if (j === i) j++;
      const lit = text.slice(i, j);
      put(/^-?\d/.test(lit) ? 'n' : 'l', lit);
      i = j;
    }
  }
  flushText();
  pre.replaceChildren(...out);
}

// ---- the traffic bar ----

for (const id of ['#f-session', '#f-group', '#f-method', '#f-status']) $(id).addEventListener('change', render);
$('#f-text').addEventListener('input', render);

$('#pause').addEventListener('click', () => {
  state.paused = !state.paused;
  state.frozen = state.paused ? state.rows.slice() : [];
  $('#pause').textContent = state.paused ? 'Resume' : 'Pause';
  $('#paused-note').hidden = !state.paused;
  state.unseen = 0;
  $('#paused-note').textContent = '0 new';
  setConn(state.paused ? 'paused' : 'live', state.paused ? 'paused' : 'live');
  if (!state.paused) render();
});

$('#clear').addEventListener('click', async () => {
  try {
    await api('clear', { method: 'POST' });
  } catch (e) {
    return;
  }
  state.rows = [];
  state.frozen = [];
  state.bySeq.clear();
  state.open.clear();
  render();
});

$('#export').addEventListener('click', () => {
  const f = filters();
  const lines = (state.paused ? state.frozen : state.rows).filter((r) => matches(r, f)).map((r) => JSON.stringify(r)).join('\n');
  const url = URL.createObjectURL(new Blob([lines ? lines + '\n' : ''], { type: 'application/jsonl' }));
  const a = el('a');
  a.href = url;
  a.download = 'dynamic-mcp-traffic-' + new Date().toISOString().replace(/[:.]/g, '-') + '.jsonl';
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
});

// ---- tabs ----

for (const b of document.querySelectorAll('#tabs button')) {
  b.addEventListener('click', () => {
    state.tab = b.dataset.tab;
    for (const o of document.querySelectorAll('#tabs button')) o.classList.toggle('on', o === b);
    for (const p of document.querySelectorAll('.pane')) p.hidden = p.id !== state.tab;
    poll();
  });
}

// ---- upstreams and clients, polled ----

async function poll() {
  if (!state.live) return;
  try {
    const [up, cl] = await Promise.all([api('upstreams').then((r) => r.json()), api('clients').then((r) => r.json())]);
    renderUpstreams(up);
    renderClients(cl);
  } catch (e) {
    // shown by the connection badge; polled again
  }
}

function renderUpstreams(v) {
  $('#modes').textContent = v.modes.length
    ? 'tools/list costs the client ' + v.modes.map((m) => fmtSize(m.bytes) + ' in ' + m.mode + ' mode').join(', ') + '.'
    : '';
  const body = document.createDocumentFragment();
  let n = 0;
  for (const g of v.groups) {
    for (const s of g.servers) {
      n++;
      const tr = el('tr', 'server');
      tr.dataset.server = s.id;
      tr.dataset.state = s.state;
      const name = el('td', null, s.id);
      if (s.server_name) name.title = s.server_name + ' ' + (s.server_version || '');
      const err = el('td', 'err');
      if (s.error) {
        err.append(el('div', 'reason', s.error));
        if (s.stderr && s.stderr.length > 1) err.append(el('div', 'stderr', s.stderr.join('\n')));
      }
      tr.append(name, el('td', null), el('td', null, s.protocol || ''),
        el('td', 'num', s.tools + (s.tools_bytes ? ' (' + fmtSize(s.tools_bytes) + ')' : '') + (s.hidden_tools ? ' +' + s.hidden_tools + ' hidden' : '')),
        el('td', 'num', s.prompts), el('td', 'num', s.resources + s.templates),
        el('td', null, fmtAgo(s.since)), el('td', 'num', s.restarts), err,
        el('td', null, (s.pin_changed || []).join(', ')));
      tr.children[1].append(badge(s.state === 'failed' ? 'down' : s.state, s.state));
      body.append(tr);
    }
  }
  $('#servers tbody').replaceChildren(body);
  $('#count-upstreams').textContent = n;
}

function renderClients(list) {
  const body = document.createDocumentFragment();
  for (const c of list) {
    const tr = el('tr', 'session');
    tr.dataset.session = c.id;
    const caps = el('td', 'caps');
    for (const k of Object.keys(c.capabilities || {})) caps.append(el('span', 'cap', k));
    // The mode it is shown, and why (mode: auto chooses by the client).
    const mode = el('td', 'mode', c.mode || '');
    if (c.mode_why) mode.append(el('div', 'why', c.mode_why));
    tr.append(el('td', null, c.id),
      // Who: the caller http.auth or a static token names, and the profile it sees.
      el('td', null, c.transport + (c.user ? ' · ' + c.user : '') + (c.profile ? ' · profile ' + c.profile : '')),
      el('td', null, c.name ? c.name + ' ' + (c.version || '') : '(not initialized)'),
      mode,
      el('td', null, c.protocol_version || ''), caps, el('td', 'num', c.inflight), el('td', 'num', c.dropped));
    body.append(tr);
  }
  $('#sessions tbody').replaceChildren(body);
  $('#count-clients').textContent = list.length;
}

// ---- approvals, polled every second ----

const pendingRows = new Map(); // id -> tr, kept so that an answer being chosen survives a poll

async function pollApprovals() {
  if (!state.live) return;
  let v;
  try {
    v = await api('approvals').then((r) => r.json());
  } catch (e) {
    return; // shown by the connection badge; polled again
  }
  renderPending(v.pending || []);
  renderGrants(v.grants || []);
}

function renderPending(list) {
  const seen = new Set();
  const body = $('#pending tbody');
  for (const p of list) {
    seen.add(p.id);
    let tr = pendingRows.get(p.id);
    if (!tr) {
      tr = pendingRow(p);
      pendingRows.set(p.id, tr);
      body.append(tr);
    }
    tr.querySelector('.left').textContent = fmtLeft(p.deadline);
  }
  for (const [id, tr] of pendingRows) {
    if (!seen.has(id)) {
      tr.remove();
      pendingRows.delete(id);
    }
  }
  const n = list.length;
  $('#count-approvals').textContent = n;
  $('#count-approvals').classList.toggle('attn', n > 0);
  $('#pending-empty').hidden = n > 0;
  document.title = (n ? '(' + n + ') ' : '') + 'dynamic-mcp inspector';
}

function fmtLeft(t) {
  const s = Math.max(0, Math.round((new Date(t) - Date.now()) / 1000));
  return s >= 60 ? Math.floor(s / 60) + 'm ' + (s % 60) + 's' : s + 's';
}

function pendingRow(p) {
  const tr = el('tr', 'approval');
  tr.dataset.id = p.id;
  const args = el('td', 'args', p.arguments === undefined ? '' : JSON.stringify(p.arguments));
  if (p.clipped) args.append(' ', el('span', 'note', '(cut, ' + p.arguments_size + ' bytes)'));
  const rule = el('td', null, p.rule || '(default)');
  if (p.description) rule.title = p.description;
  const answer = el('td', 'answer');
  const scope = el('select', 'scope');
  scope.title = 'what the approval grants';
  for (const [value, label] of [['once', 'this call'], ['session', 'this session'], ['1m', 'for 1 minute'],
    ['10m', 'for 10 minutes'], ['1h', 'for 1 hour'], ['calls:10', 'and 10 more calls']]) {
    const o = el('option', null, label);
    o.value = value;
    scope.append(o);
  }
  const argGlob = el('input', 'arg-glob');
  argGlob.placeholder = 'key=glob (optional)';
  argGlob.title = 'narrow the grant to calls whose argument matches, e.g. path=/tmp/**';
  argGlob.spellcheck = false;
  const approve = el('button', 'approve', 'Approve');
  approve.type = 'button';
  const deny = el('button', 'deny', 'Deny');
  deny.type = 'button';
  const note = el('span', 'error');
  approve.addEventListener('click', () => answerCall(p.id, 'approve', grantOptions(scope.value, argGlob.value), note));
  deny.addEventListener('click', () => answerCall(p.id, 'deny', null, note));
  answer.append(scope, ' ', argGlob, ' ', approve, ' ', deny, ' ', note);
  tr.append(el('td', null, fmtTime(p.time)), el('td', null, p.id),
    el('td', null, (p.client || '(unnamed)') + ' / ' + shortSession(p.session) + (p.replica ? ' @ ' + p.replica : '')),
    el('td', null, p.group + ' / ' + p.server), el('td', null, p.tool), args, rule, el('td', 'left'), answer);
  return tr;
}

function grantOptions(scope, glob) {
  const o = {};
  if (scope === 'session') o.session = true;
  else if (scope.startsWith('calls:')) o.calls = Number(scope.slice(6));
  else if (scope !== 'once') o.for = scope;
  const eq = glob.indexOf('=');
  if (eq > 0) o.args = { [glob.slice(0, eq).trim()]: glob.slice(eq + 1).trim() };
  return o;
}

async function answerCall(id, what, options, note) {
  note.textContent = '';
  try {
    const init = { method: 'POST' };
    if (options) {
      init.body = JSON.stringify(options);
      init.headers = { 'Content-Type': 'application/json' };
    }
    await api('approvals/' + encodeURIComponent(id) + '/' + what, init);
  } catch (e) {
    note.textContent = e.message;
  }
  pollApprovals();
}

// grantsShown is the grants list the table shows, so that a poll that
// finds it unchanged leaves the rows (and a click on one) alone.
let grantsShown = '';

function renderGrants(list) {
  const shown = JSON.stringify(list);
  if (shown === grantsShown) return;
  grantsShown = shown;
  const body = document.createDocumentFragment();
  for (const g of list) {
    const tr = el('tr', 'grant');
    tr.dataset.id = g.id;
    const scope = [];
    if (g.session) scope.push('session ' + shortSession(g.session));
    if (g.expires) scope.push('until ' + new Date(g.expires).toLocaleTimeString([], { hour12: false }));
    if (g.calls_left) scope.push(g.calls_left + ' more calls');
    const revoke = el('button', 'revoke', 'Revoke');
    revoke.type = 'button';
    revoke.addEventListener('click', async () => {
      try {
        await api('grants/' + encodeURIComponent(g.id) + '/revoke', { method: 'POST' });
      } catch (e) {
        // gone already: the next poll shows it
      }
      pollApprovals();
    });
    const cell = el('td', 'answer');
    cell.append(revoke);
    tr.append(el('td', null, g.id), el('td', null, g.group + ' / ' + g.server), el('td', null, g.tool), el('td', null, scope.join(', ') || 'all sessions'),
      el('td', 'args', g.args ? Object.entries(g.args).map(([k, v]) => k + '=' + v).join(' ') : ''),
      el('td', null, g.approved_by), el('td', 'num', g.used), cell);
    body.append(tr);
  }
  $('#grants tbody').replaceChildren(body);
  $('#grants-empty').hidden = list.length > 0;
}

// ---- start ----

function start() {
  state.live = true;
  stream();
  poll();
  pollApprovals();
}

setInterval(poll, 2000);
setInterval(pollApprovals, 1000);
start(); // with the token kept, or none: a hub that needs one answers 401, which asks for it
