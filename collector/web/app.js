// The collector's live page: polls the JSON API (docs/http-api.md) every
// POLL_MS and redraws. Every name shown comes from agents and layouts, so
// text is only ever set through textContent, never parsed as HTML.
'use strict';

const POLL_MS = 2000;
// A ratio to the rail's (or group's) median this far from 1 is "hot"/"cold".
const HOT_RATIO = 2;
const COLD_RATIO = 0.5;
// A pause fraction at least this high is hot (the PFC storm threshold is 0.5).
const HOT_FRACTION = 0.1;

// Up to this many node x rail cells the heatmap is a table of cells (one
// element each, updated in place); above it a canvas, with the cells that
// matter listed as text in #hot-cells (68,000 table cells cost seconds).
const TABLE_MAX_CELLS = 4096;
// Rows of #hot-cells: every cell a finding names, then the hottest others.
const HOT_LIST = 20;
// Canvas cell size in CSS pixels; nodes wrap into rows of blocks.
const CANVAS_CELL_W = 4;
const CANVAS_CELL_H = 8;
const CANVAS_GAP = 2;

const state = {
  metric: 'rx_bytes', job: '', dim: '', fabric: null, jobs: [],
  // The active findings drawn last, by id: what an ack or silence names.
  findings: new Map(),
  // Per URL: the ETag and body of the last 200, for If-None-Match.
  cache: new Map(),
  // Layout of the canvas heatmap: which node x rail a pixel shows.
  grid: null,
  // What the page costs the browser, shown in #page-stats.
  stats: { polls: 0, notModified: 0, fabricDraws: 0, firstHeatmapMs: null, lastHeatmapMs: null,
    lastPollMs: null },
};

function $(id) { return document.getElementById(id); }

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function si(v, unit) {
  if (v === null || v === undefined) return '–';
  const steps = [[1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'k']];
  for (const [f, p] of steps) {
    if (Math.abs(v) >= f) return (v / f).toPrecision(3) + ' ' + p + unit;
  }
  return (Math.abs(v) >= 1 || v === 0 ? v.toPrecision(3) : v.toExponential(1)) + ' ' + unit;
}

function formatValue(v, unit) {
  if (v === null || v === undefined) return '–';
  if (unit === 'fraction') return (100 * v).toFixed(v >= 0.1 ? 0 : 1) + '%';
  if (unit === 'bytes/s') return si(v, 'B/s');
  if (unit === 'packets/s') return si(v, 'pkt/s');
  return si(v, unit);
}

function duration(seconds) {
  if (seconds === null || seconds === undefined) return '–';
  const s = Math.round(seconds);
  if (s < 120) return s + 's';
  if (s < 7200) return Math.round(s / 60) + 'm';
  if (s < 172800) return Math.round(s / 3600) + 'h';
  return Math.round(s / 86400) + 'd';
}

// A collector with --auth_token_file wants a token with the read scope on
// every /api/ read (docs/http-api.md#access): the page asks for it once,
// keeps it in this browser's local storage and sends it as a bearer token.
const TOKEN_KEY = 'fabricdiag.token';

function storedToken() {
  try {
    return localStorage.getItem(TOKEN_KEY) || '';
  } catch (e) {
    return '';  // storage disabled: every load asks again
  }
}

// Thrown when the collector refused the page's token (or its lack of one):
// the login form is shown, the poll goes on and succeeds once signed in.
class LoginNeeded extends Error {}

// Thrown for an answer to a request sent with another token than the one
// stored now (signed in or out while it was on its way): the sign-in's own
// refresh answers instead, so it shows nothing. A refusal of the old token
// would bring the form back over a token that works.
class Superseded extends Error {}

// What a failed read shows in the status line: nothing if it was
// superseded; `prefix` before any other error's message.
function readFailed(e, prefix = '') {
  if (e instanceof Superseded) return;
  setStatus(false, e instanceof LoginNeeded ? e.message : prefix + e.message);
}

function showLogin(why) {
  const form = $('login');
  $('login-why').textContent = why;
  if (form.hidden) {
    form.hidden = false;
    $('login-token').focus();
  }
}

// fetch() with the stored token; a 401 or 403 shows the login form.
async function apiFetch(url, headers) {
  const token = storedToken();
  const all = Object.assign({}, headers || {});
  if (token) all.Authorization = 'Bearer ' + token;
  const r = await fetch(url, { cache: 'no-store', headers: all });
  if (storedToken() !== token) throw new Superseded('signed in or out meanwhile');
  $('logout').hidden = !token;
  if (r.status === 401 || r.status === 403) {
    const body = await r.json().catch(() => ({}));
    const why = r.status === 401 && !token
      ? 'This collector needs a token with the read scope (see docs/http-api.md, "Access").'
      : 'The token was refused: ' + (body.error || r.status);
    showLogin(why);
    throw new LoginNeeded('sign in with a token');
  }
  return r;
}

$('login').addEventListener('submit', (e) => {
  e.preventDefault();
  const token = $('login-token').value.trim();
  if (!token) return;
  try {
    localStorage.setItem(TOKEN_KEY, token);
  } catch (err) {
    showLogin('This browser keeps no local storage: the token cannot be kept.');
    return;
  }
  $('login-token').value = '';
  $('login').hidden = true;
  state.cache.clear();
  refresh();
});
$('logout').addEventListener('click', (e) => {
  e.preventDefault();
  try {
    localStorage.removeItem(TOKEN_KEY);
  } catch (err) {
    // nothing kept
  }
  $('logout').hidden = true;
  state.cache.clear();
  refresh();
});

async function getJson(url) {
  const r = await apiFetch(url);
  const body = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(url + ': ' + (body.error || r.status));
  return body;
}

// GET with If-None-Match when the last response had an ETag: a body the
// page holds already is not sent again (304). {body, changed}.
async function getJsonCached(url) {
  const held = state.cache.get(url);
  const headers = held ? { 'If-None-Match': held.etag } : {};
  const r = await apiFetch(url, headers);
  if (r.status === 304 && held) {
    state.stats.notModified++;
    return { body: held.body, changed: false };
  }
  const body = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(url + ': ' + (body.error || r.status));
  const etag = r.headers.get('ETag');
  if (etag) state.cache.set(url, { etag, body });
  else state.cache.delete(url);
  return { body, changed: true };
}

// --- findings --------------------------------------------------------------

function evidenceText(f) {
  const parts = [];
  for (const [k, v] of Object.entries(f.evidence || {})) {
    parts.push(k + '=' + (typeof v === 'number' ? +v.toPrecision(4) : v));
  }
  return parts.join(', ');
}

// An operator's marks (docs/cli.md, "Acknowledge, silence, maintenance"):
// shown, never hidden.
function markText(f) {
  const parts = [];
  if (f.acked) parts.push('[acked by ' + f.acked.who + ']');
  if (f.silenced_by && f.silenced_by.length) parts.push('[silenced ' + f.silenced_by.join(',') + ']');
  return parts.join(' ');
}

// The ack and silence buttons of an active finding (the collector's
// POST /api/v1/findings/ID/ack and /api/v1/silences, docs/http-api.md):
// they need a token with the admin scope.
function markButtons(f) {
  if (f.state !== 'active') return null;
  return el('span', { class: 'mark-buttons' },
    el('button', { type: 'button', class: 'mark', 'data-action': 'ack', 'data-id': f.id,
      title: 'acknowledge: someone is on it', text: 'ack' }),
    el('button', { type: 'button', class: 'mark', 'data-action': 'silence', 'data-id': f.id,
      title: 'silence findings of this kind on this node and port', text: 'silence' }));
}

function findingRow(f) {
  const where = f.device || '';
  const marks = markText(f);
  return el('tr', { class: 'finding-row ' + f.state, 'data-id': f.id, 'data-kind': f.kind },
    el('td', { class: 'sev ' + f.severity, text: f.severity }),
    el('td', { class: 'kind', text: f.kind }),
    el('td', { text: f.job || '–' }),
    el('td', { text: f.group || '–' }),
    el('td', { class: 'node', text: f.node || '–' }),
    el('td', { class: 'device', text: where || '–' }),
    el('td', { text: duration(f.duration_seconds) }),
    el('td', { class: 'summary' },
      el('div', { text: (marks ? marks + ' ' : '') + f.summary }, markButtons(f)),
      el('div', { class: 'evidence', text: f.id + ': ' + evidenceText(f) })));
}

// A cluster's collector that cannot see the shared findings says so: what
// the page lists may be out of date (docs/cluster.md).
function drawStaleness(staleness) {
  const banner = $('stale-banner');
  banner.hidden = !(staleness && staleness.stale);
  if (!banner.hidden) {
    banner.textContent = 'Findings stale: this collector has not seen the cluster\'s findings for ' +
      Math.floor(staleness.age_seconds) + ' s. What this page lists may be out of date (see /healthz).';
  }
}

// The filter box: words "key=value", the query parameters of
// /api/v1/findings (docs/http-api.md), so that the collector checks them
// as it checks the CLI's; kept in the page's #fragment for a link to share.
// A mistake is shown beside the box and the list stays unfiltered.
function findingsUrl() {
  const params = new URLSearchParams();
  for (const word of $('findings-filter').value.trim().split(/\s+/)) {
    if (!word) continue;
    const eq = word.indexOf('=');
    if (eq <= 0) throw new Error(`"${word}" is not key=value (node, device, job, kind, severity, since, until)`);
    params.append(word.slice(0, eq), word.slice(eq + 1));
  }
  const query = params.toString();
  return '/api/v1/findings' + (query ? '?' + query : '');
}

function showFilterError(message) {
  const e = $('filter-error');
  e.textContent = message ? 'filter: ' + message : '';
  e.hidden = !message;
}

async function getFindings() {
  let url;
  try {
    url = findingsUrl();
  } catch (e) {
    showFilterError(e.message);
    return getJson('/api/v1/findings');
  }
  const r = await apiFetch(url);
  const body = await r.json().catch(() => ({}));
  if (r.status === 400) {
    showFilterError(body.error || 'refused');
    return getJson('/api/v1/findings');
  }
  if (!r.ok) throw new Error(url + ': ' + (body.error || r.status));
  showFilterError('');
  return body;
}

// POSTs a mark with the stored token; the collector's answer as an object,
// or an Error saying why it was refused.
async function postMark(url, body) {
  const token = storedToken();
  const headers = { 'Content-Type': 'application/json' };
  if (token) headers.Authorization = 'Bearer ' + token;
  const r = await fetch(url, { method: 'POST', cache: 'no-store', headers, body: JSON.stringify(body) });
  const answer = await r.json().catch(() => ({}));
  if (r.status === 401 || r.status === 403) {
    throw new Error('refused: ' + (answer.error || r.status) +
      ' (acks and silences need a token with the admin scope: log out and sign in with one)');
  }
  if (!r.ok) throw new Error(answer.error || String(r.status));
  return answer;
}

function showMarkResult(text, error) {
  const e = $('mark-result');
  e.textContent = text;
  e.className = error ? 'error' : '';
}

async function markFinding(action, id) {
  const f = state.findings.get(id);
  if (!f) return;
  const comment = $('mark-comment').value.trim();
  if (action === 'ack') {
    await postMark(`/api/v1/findings/${encodeURIComponent(id)}/ack`, { comment });
    showMarkResult(`acknowledged ${id}`, false);
  } else {
    const matchers = { kind: f.kind };
    for (const key of ['job', 'node', 'device']) if (f[key]) matchers[key] = f[key];
    const s = await postMark('/api/v1/silences', { matchers, for: $('mark-for').value, comment });
    showMarkResult(`silenced as ${s.id} until ${new Date(s.until).toLocaleString()}: ` +
      Object.entries(s.matchers).map(([k, v]) => k + '=' + v).join(' '), false);
  }
  const findings = await getFindings();
  drawFindings(findings);
}

$('findings-active').addEventListener('click', (e) => {
  const button = e.target.closest('button[data-action]');
  if (!button) return;
  markFinding(button.dataset.action, button.dataset.id)
    .catch((err) => showMarkResult(err.message, true));
});

function drawFindings(data) {
  drawStaleness(data.staleness);
  state.findings = new Map(data.active.map((f) => [f.id, f]));
  $('findings-active').replaceChildren(...data.active.map(findingRow));
  $('findings-resolved').replaceChildren(...data.resolved.map(findingRow));
  $('active-count').textContent = '(' + data.active.length + ' open)';
  $('resolved-count').textContent = String(data.resolved.length);
  $('no-findings').hidden = data.active.length > 0;
}

// --- fabric ----------------------------------------------------------------

function metricInfo(fabric) {
  return fabric.metrics.find((m) => m.name === state.metric) || fabric.metrics[0];
}

// White at ratio 1, red above, blue below (log scale, saturating at 4x).
function ratioRgb(ratio) {
  const t = Math.max(-1, Math.min(1, Math.log2(ratio) / 2));
  if (t >= 0) return [240 - 25 * t, 240 - 192 * t, 240 - 209 * t];
  const u = -t;
  return [240 - 170 * u, 240 - 130 * u, 240 - 20 * u];
}

function fractionRgb(f) {
  const t = Math.max(0, Math.min(1, f / 0.5));
  return [240 - 25 * t, 240 - 192 * t, 240 - 209 * t];
}

function css(rgb) { return `rgb(${rgb[0]}, ${rgb[1]}, ${rgb[2]})`; }

function drawMetricSelect(fabric) {
  const select = $('metric');
  if (select.options.length !== fabric.metrics.length) {
    select.replaceChildren(...fabric.metrics.map((m) =>
      el('option', { value: m.name, text: m.title, selected: m.name === state.metric })));
  }
  const m = metricInfo(fabric);
  $('metric-help').textContent = m.unit === 'fraction'
    ? 'share of time paused (highest priority, either direction)'
    : 'colour: ratio to the median of the same rail over all nodes';
}

// What one node x rail cell shows: {v, rgb, text, hot, cold, ratio}.
function cellLook(m, v, median) {
  const c = { v, rgb: null, text: '', hot: false, cold: false, ratio: null };
  if (v === null || v === undefined) {
    c.text = '–';
  } else if (m.unit === 'fraction') {
    c.rgb = fractionRgb(v);
    c.text = formatValue(v, m.unit);
    c.hot = v >= HOT_FRACTION;
  } else if (median > 0) {
    c.ratio = v / median;
    c.rgb = ratioRgb(c.ratio);
    c.text = c.ratio.toFixed(c.ratio >= 10 ? 0 : 2) + '×';
    c.hot = c.ratio >= HOT_RATIO;
    c.cold = c.ratio <= COLD_RATIO;
  } else {
    c.text = formatValue(v, m.unit);
  }
  return c;
}

// The fabric's lookups the heatmap and its lists share.
function fabricIndex(fabric) {
  const m = metricInfo(fabric);
  const outlined = new Map();
  for (const o of fabric.outlined) outlined.set(o.node + '\u0000' + o.rail, o.findings);
  const down = new Set(fabric.links_down.map((d) => d.node + '\u0000' + d.rail));
  return { m, values: fabric.values[m.name] || [], medians: fabric.rail_medians[m.name] || [], outlined, down };
}

function cellTitle(ix, node, rail, r, v, findings) {
  let title = `${node} ${rail}: ${formatValue(v, ix.m.unit)}`;
  const median = ix.medians[r];
  if (ix.m.unit !== 'fraction' && median !== null && median !== undefined) {
    title += ` (rail median ${formatValue(median, ix.m.unit)})`;
  }
  if (findings) title += '\n' + findings.map((f) => `${f.id} ${f.kind} (${f.severity})`).join('\n');
  return title;
}

function drawHeatmap(fabric) {
  const start = performance.now();
  const cells = fabric.nodes.length * fabric.rails.length;
  const asTable = cells <= TABLE_MAX_CELLS;
  $('heatmap').hidden = !asTable;
  $('heatmap-canvas').hidden = asTable;
  $('heatmap-canvas-help').hidden = asTable;
  const ix = fabricIndex(fabric);
  if (asTable) {
    drawHeatmapTable(fabric, ix);
    state.grid = null;
  } else {
    $('heatmap').replaceChildren();
    drawHeatmapCanvas(fabric, ix);
  }
  drawHotCells(fabric, ix);
  $('fabric-scope').hidden = fabric.scope !== 'collector';
  $('no-fabric').hidden = fabric.nodes.length > 0;
  const ms = performance.now() - start;
  state.stats.fabricDraws++;
  state.stats.lastHeatmapMs = ms;
  if (state.stats.firstHeatmapMs === null && fabric.nodes.length > 0) {
    state.stats.firstHeatmapMs = performance.now();
  }
}

// One <td> per cell, made once per set of nodes and rails and then updated
// in place.
function drawHeatmapTable(fabric, ix) {
  const table = $('heatmap');
  const shape = fabric.rails.join('\u0000') + '\u0001' + fabric.nodes.join('\u0000');
  if (table.dataset.shape !== shape) {
    const head = el('tr', {}, el('th', { class: 'node', text: 'node \\ rail' }),
      ...fabric.rails.map((r) => el('th', { text: r })));
    const rows = [head];
    for (const node of fabric.nodes) {
      rows.push(el('tr', {}, el('th', { class: 'node', text: node }),
        ...fabric.rails.map((rail) => el('td', { class: 'cell', 'data-node': node, 'data-rail': rail }))));
    }
    table.replaceChildren(...rows);
    table.dataset.shape = shape;
  }
  const trs = table.rows;
  fabric.nodes.forEach((node, n) => {
    const tds = trs[n + 1].cells;
    fabric.rails.forEach((rail, r) => {
      const v = ix.values[n] ? ix.values[n][r] : null;
      const key = node + '\u0000' + rail;
      const findings = ix.outlined.get(key);
      const c = cellLook(ix.m, v, ix.medians[r]);
      const classes = ['cell'];
      if (v === null || v === undefined) classes.push('absent');
      if (c.hot) classes.push('hot');
      if (c.cold) classes.push('cold');
      if (findings) classes.push('finding');
      if (ix.down.has(key)) classes.push('down');
      const td = tds[r + 1];
      const className = classes.join(' ');
      if (td.className !== className) td.className = className;
      if (td.textContent !== c.text) td.textContent = c.text;
      const title = cellTitle(ix, node, rail, r, v, findings);
      if (td.title !== title) td.title = title;
      const bg = c.rgb ? css(c.rgb) : '';
      if (td.style.background !== bg) td.style.background = bg;
    });
  });
}

// Every cell a pixel block: nodes left to right in rows of blocks, each
// block the node's rails side by side. One ImageData write per update.
function drawHeatmapCanvas(fabric, ix) {
  const canvas = $('heatmap-canvas');
  const R = fabric.rails.length;
  const N = fabric.nodes.length;
  const blockW = R * CANVAS_CELL_W + CANVAS_GAP;
  const rowH = CANVAS_CELL_H + CANVAS_GAP;
  const width = Math.max(blockW, Math.floor(($('heatmap-scroll').clientWidth || 1200) - 4));
  const perRow = Math.max(1, Math.floor(width / blockW));
  const height = Math.ceil(N / perRow) * rowH;
  if (canvas.width !== perRow * blockW || canvas.height !== height) {
    canvas.width = perRow * blockW;
    canvas.height = height;
  }
  const ctx = canvas.getContext('2d');
  const img = ctx.createImageData(canvas.width, canvas.height);
  const px = img.data;
  const fill = (x0, y0, rgb) => {
    for (let y = y0; y < y0 + CANVAS_CELL_H; y++) {
      let i = (y * canvas.width + x0) * 4;
      for (let x = 0; x < CANVAS_CELL_W; x++, i += 4) {
        px[i] = rgb[0]; px[i + 1] = rgb[1]; px[i + 2] = rgb[2]; px[i + 3] = 255;
      }
    }
  };
  const absent = [242, 244, 247];
  const down = [68, 68, 68];
  const marks = [];
  for (let n = 0; n < N; n++) {
    const row = ix.values[n] || [];
    const x0 = (n % perRow) * blockW;
    const y0 = Math.floor(n / perRow) * rowH;
    for (let r = 0; r < R; r++) {
      const v = row[r];
      const key = fabric.nodes[n] + '\u0000' + fabric.rails[r];
      let rgb = absent;
      if (ix.down.size && ix.down.has(key)) rgb = down;
      else if (v !== null && v !== undefined) rgb = cellLook(ix.m, v, ix.medians[r]).rgb || absent;
      fill(x0 + r * CANVAS_CELL_W, y0, rgb);
      if (ix.outlined.size && ix.outlined.has(key)) marks.push([x0 + r * CANVAS_CELL_W, y0]);
    }
  }
  ctx.putImageData(img, 0, 0);
  ctx.strokeStyle = '#000';
  ctx.lineWidth = 2;
  for (const [x, y] of marks) ctx.strokeRect(x - 1, y - 1, CANVAS_CELL_W + 2, CANVAS_CELL_H + 2);
  state.grid = { perRow, blockW, rowH, rails: R, nodes: N };
}

// The canvas cell under a mouse position: [node index, rail index] or null.
function cellAt(event) {
  const g = state.grid;
  if (!g) return null;
  const rect = $('heatmap-canvas').getBoundingClientRect();
  const x = event.clientX - rect.left;
  const y = event.clientY - rect.top;
  const col = Math.floor(x / g.blockW);
  const r = Math.floor((x - col * g.blockW) / CANVAS_CELL_W);
  const n = Math.floor(y / g.rowH) * g.perRow + col;
  if (col >= g.perRow || r >= g.rails || n >= g.nodes || y % g.rowH >= CANVAS_CELL_H) return null;
  return [n, r];
}

function showCellAt(event) {
  const at = cellAt(event);
  const fabric = state.fabric;
  if (!at || !fabric) {
    $('cell-info').textContent = '';
    return;
  }
  const [n, r] = at;
  const ix = fabricIndex(fabric);
  const node = fabric.nodes[n];
  const rail = fabric.rails[r];
  const v = ix.values[n] ? ix.values[n][r] : null;
  const findings = ix.outlined.get(node + '\u0000' + rail);
  const c = cellLook(ix.m, v, ix.medians[r]);
  $('cell-info').textContent = cellTitle(ix, node, rail, r, v, findings).replace(/\n/g, '; ') +
    (c.ratio !== null ? ` = ${c.text}` : '');
}

// The cells worth reading as text: every cell a finding names, then the
// hottest others (and links down), at most HOT_LIST of each.
function drawHotCells(fabric, ix) {
  const hot = [];
  const named = [];
  fabric.nodes.forEach((node, n) => {
    const row = ix.values[n] || [];
    fabric.rails.forEach((rail, r) => {
      const key = node + '\u0000' + rail;
      const findings = ix.outlined.get(key);
      const isDown = ix.down.has(key);
      const v = row[r];
      if (!findings && !isDown && (v === null || v === undefined)) return;
      const c = cellLook(ix.m, v, ix.medians[r]);
      const item = { n, r, node, rail, c, findings, down: isDown };
      if (findings) named.push(item);
      else if (c.hot || isDown) hot.push(item);
    });
  });
  const score = (i) => (i.down ? Number.MAX_VALUE : i.c.ratio !== null ? i.c.ratio : i.c.v);
  hot.sort((a, b) => score(b) - score(a));
  const shown = named.slice(0, HOT_LIST).concat(hot.slice(0, HOT_LIST));
  const rows = shown.map((i) => {
    const classes = ['hot-cell'];
    if (i.findings) classes.push('finding');
    if (i.c.hot) classes.push('hot');
    if (i.down) classes.push('down');
    return el('tr', { class: classes.join(' '), 'data-node': i.node, 'data-rail': i.rail },
      el('td', { class: 'text', text: i.node }), el('td', { class: 'text', text: i.rail }),
      el('td', { text: formatValue(i.c.v, ix.m.unit) }),
      el('td', { text: i.c.ratio !== null ? i.c.text : '–' }),
      el('td', { class: 'text', text: (i.down ? 'link down ' : '') +
        (i.findings || []).map((f) => `${f.kind} ${f.id} (${f.severity})`).join(', ') }));
  });
  $('hot-cells').replaceChildren(...rows);
  const more = Math.max(0, named.length - HOT_LIST) + Math.max(0, hot.length - HOT_LIST);
  $('hot-cells-summary').textContent = `${named.length} cells named in findings, ${hot.length} other hot ` +
    `or down cells` + (more > 0 ? ` (${more} not listed)` : '') + ` of ${fabric.nodes.length} nodes × ` +
    `${fabric.rails.length} rails`;
}

function drawUplinks(fabric) {
  const blocks = fabric.switches.map((sw) => {
    const max = Math.max(1, ...sw.uplinks.map((u) => u.tx_bytes || 0));
    const skew = sw.tx_max_over_mean;
    const rows = sw.uplinks.map((u) => {
      const width = u.tx_bytes ? Math.max(1, Math.round(300 * u.tx_bytes / max)) : 0;
      const hot = sw.tx_mean > 0 && u.tx_bytes >= 1.5 * sw.tx_mean;
      const bar = el('div', { class: 'bar' + (hot ? ' hot' : '') });
      bar.style.width = width + 'px';
      return el('div', { class: 'bar-row' + (u.findings.length ? ' finding' : ''), 'data-port': u.port },
        el('span', { class: 'port', text: u.port }), bar,
        el('span', { text: u.reported ? formatValue(u.tx_bytes, 'bytes/s') + ' out' : 'not reported' }));
    });
    return el('div', { class: 'switch', 'data-switch': sw.switch },
      el('div', {},
        el('span', { class: 'name', text: sw.switch }),
        el('span', { class: 'quiet', text: skew !== null
          ? `  max/mean ${skew.toFixed(2)} (mean ${formatValue(sw.tx_mean, 'bytes/s')})` : '  no rates' })),
      ...rows);
  });
  $('uplinks').replaceChildren(...blocks);
  $('no-uplinks').hidden = fabric.switches.length > 0;
}

// --- topology --------------------------------------------------------------

// The effective topology's host links are listed up to this many (a
// 25,000-host fabric has 200,000): the summary counts them all.
const TOPOLOGY_ROWS = 500;
// The topology moves when cables do: read every tenth poll.
const TOPOLOGY_EVERY_POLLS = 10;

function drawTopology(t) {
  const bySource = { declared: 0, discovered: 0 };
  for (const l of t.links) if (l.source in bySource) bySource[l.source]++;
  const upDeclared = t.switch_links.filter((l) => l.source === 'declared').length;
  $('topology-summary').textContent =
    `${t.switches.length} switches; host links: ${bySource.declared} declared, ` +
    `${bySource.discovered} discovered over LLDP; ${t.switch_links.length} switch links ` +
    `(${upDeclared} declared)` +
    (t.declared_version ? '' : '. No topology file: everything comes from LLDP.');
  $('topology-problems').replaceChildren(
    ...t.problems.map((p) => el('li', { class: 'finding', text: p })));
  const rows = t.links.slice(0, TOPOLOGY_ROWS).map((l) =>
    el('tr', { class: 'source-' + (l.source || 'unknown') },
      el('td', { class: 'text', text: l.host }), el('td', { class: 'text', text: l.nic }),
      el('td', { class: 'text', text: l.switch }), el('td', { class: 'text', text: l.port }),
      el('td', { class: 'text', text: l.source || '-' })));
  $('topology-links').replaceChildren(...rows);
  const more = t.links.length - rows.length;
  $('topology-more').hidden = more <= 0;
  $('topology-more').textContent = `and ${more} more host links (fabricdiag topology show --effective)`;
}

async function refreshTopology() {
  if (state.stats.polls % TOPOLOGY_EVERY_POLLS !== 0) return;
  drawTopology(await getJson('/api/v1/topology?view=effective'));
}

// --- jobs ------------------------------------------------------------------

function drawJobSelect(jobs) {
  const select = $('job');
  const names = jobs.map((j) => j.job);
  if (!names.includes(state.job)) state.job = names[0] || '';
  const current = Array.from(select.options).map((o) => o.value);
  if (current.join('\u0000') !== names.join('\u0000')) {
    select.replaceChildren(...jobs.map((j) =>
      el('option', { value: j.job, text: `${j.job} (${j.parallelism}, ${j.ranks} ranks)`, selected: j.job === state.job })));
  }
  select.value = state.job;
  $('no-jobs').hidden = jobs.length > 0;
}

function ratioCell(ratio) {
  let cls = '';
  if (ratio !== null && ratio >= HOT_RATIO) cls = 'hot';
  if (ratio !== null && ratio <= COLD_RATIO) cls = 'cold';
  return el('td', { class: cls, text: ratio === null ? '–' : ratio.toFixed(2) + '×' });
}

function drawJob(job) {
  const dims = $('dim');
  const names = job.dims.map((d) => d.dim);
  if (Array.from(dims.options).map((o) => o.value).join(',') !== names.join(',')) {
    dims.replaceChildren(...job.dims.map((d) =>
      el('option', { value: d.dim, text: `${d.dim} (${d.groups} groups of ${d.size})` })));
  }
  dims.value = job.dim;
  state.dim = job.dim;

  $('job-scope').hidden = job.scope !== 'collector';
  $('job-owner').textContent = job.shard_owner ? ` (${job.shard_owner})` : '';
  const p = job.prediction;
  $('job-summary').replaceChildren(
    el('p', { text: `${job.job}: ${job.parallelism}, ${job.ranks} ranks on ${job.hosts} hosts; ` +
      `${job.groups_total} ${job.dim} groups` +
      (job.groups.length < job.groups_total ? ` (first ${job.groups.length} shown)` : '') + '.' }),
    el('p', { class: 'quiet', text: p === null ? `The plan predicts no ${job.dim} traffic on the NICs.`
      : p.available ? `Plan: ${p.description}; busiest NIC ${formatValue(p.nic_bytes_per_step, 'B')}/step, ` +
        `${(1e3 * p.seconds_per_step).toFixed(2)} ms/step.`
      : `Plan: no prediction (${p.unavailable_reason}).` }));

  const head = el('tr', {},
    el('th', { class: 'text', text: 'host' }), el('th', { class: 'text', text: 'NIC' }),
    el('th', { class: 'text', text: 'ranks' }), el('th', { text: 'RX' }), el('th', { text: 'TX' }),
    el('th', { text: 'RX / median' }), el('th', { text: 'TX / median' }),
    el('th', { text: 'plan RX/step' }), el('th', { text: 'plan TX/step' }),
    el('th', { class: 'text', text: 'findings' }));
  const rows = [head];
  for (const g of job.groups) {
    const badges = [];
    if (g.crosses_nvlink && job.dim === 'tp') {
      badges.push(el('span', { class: 'badge cross', text: `crosses ${g.nvlink_domains_spanned} NVLink domains (tp_cross_node)` }));
    }
    for (const f of g.findings) badges.push(el('span', { class: 'badge finding', text: `${f.kind} ${f.id}` }));
    rows.push(el('tr', { class: 'group-head', 'data-group': g.name },
      el('td', { colspan: 10 }, `${g.name}: ${g.size} ranks on ${g.hosts_spanned} hosts`, ...badges)));
    for (const m of g.members) {
      const ranks = m.ranks.join(', ') + (m.rank_count > m.ranks.length ? ', …' : '');
      rows.push(el('tr', { 'data-host': m.host, 'data-nic': m.nic },
        el('td', { class: 'text', text: m.host }), el('td', { class: 'text', text: m.nic || '–' }),
        el('td', { class: 'text', text: ranks }),
        el('td', { text: formatValue(m.rx_bytes, 'bytes/s') }), el('td', { text: formatValue(m.tx_bytes, 'bytes/s') }),
        ratioCell(m.rx_ratio), ratioCell(m.tx_ratio),
        el('td', { text: m.predicted_rx_bytes_per_step === null ? '–' : si(m.predicted_rx_bytes_per_step, 'B') }),
        el('td', { text: m.predicted_tx_bytes_per_step === null ? '–' : si(m.predicted_tx_bytes_per_step, 'B') }),
        el('td', { class: 'text', text: m.findings.map((f) => `${f.kind} ${f.id}`).join(', ') })));
    }
  }
  $('groups').replaceChildren(el('table', { class: 'groups' }, ...rows));
}

// --- polling ---------------------------------------------------------------

function setStatus(ok, text) {
  const s = $('status');
  s.className = 'status ' + (ok ? 'ok' : 'error');
  s.textContent = text;
}

async function refreshJob() {
  if (!state.job) {
    $('job-scope').hidden = true;
    $('job-summary').replaceChildren();
    $('groups').replaceChildren();
    return;
  }
  const q = state.dim ? '?dim=' + encodeURIComponent(state.dim) : '';
  const job = await getJson('/api/v1/jobs/' + encodeURIComponent(state.job) + q);
  drawJob(job);
}

function drawPageStats() {
  const st = state.stats;
  const heap = performance.memory ? performance.memory.usedJSHeapSize : null;
  const e = $('page-stats');
  e.dataset.domElements = String(document.getElementsByTagName('*').length);
  e.dataset.heatmapMs = st.lastHeatmapMs === null ? '' : st.lastHeatmapMs.toFixed(1);
  e.dataset.firstHeatmapAtMs = st.firstHeatmapMs === null ? '' : st.firstHeatmapMs.toFixed(0);
  e.dataset.pollMs = st.lastPollMs === null ? '' : st.lastPollMs.toFixed(1);
  e.dataset.heapBytes = heap === null ? '' : String(heap);
  e.dataset.polls = String(st.polls);
  e.dataset.notModified = String(st.notModified);
  e.dataset.fabricDraws = String(st.fabricDraws);
  e.textContent = `page: ${e.dataset.domElements} elements; heatmap drawn in ${e.dataset.heatmapMs || '–'} ms ` +
    `(${st.fabricDraws} times); last poll ${e.dataset.pollMs || '–'} ms; ${st.polls} polls, ` +
    `${st.notModified} fabric unchanged` + (heap === null ? '' : `; JS heap ${(heap / 1048576).toFixed(1)} MiB`);
}

async function refresh() {
  const start = performance.now();
  try {
    const [findings, fabric, jobs] = await Promise.all([
      getFindings(), getJsonCached('/api/v1/fabric'), getJson('/api/v1/jobs')]);
    drawFindings(findings);
    if (fabric.changed || state.fabric === null) {
      state.fabric = fabric.body;
      drawMetricSelect(fabric.body);
      drawHeatmap(fabric.body);
      drawUplinks(fabric.body);
    }
    drawJobSelect(jobs.jobs);
    await refreshJob();
    await refreshTopology();
    setStatus(true, 'live');
    $('updated').textContent = 'updated ' + new Date(findings.generated || Date.now()).toLocaleTimeString();
  } catch (e) {
    readFailed(e, 'collector unreachable: ');
  }
  state.stats.polls++;
  state.stats.lastPollMs = performance.now() - start;
  drawPageStats();
}

$('metric').addEventListener('change', (e) => {
  state.metric = e.target.value;
  if (state.fabric) drawHeatmap(state.fabric);
});
$('job').addEventListener('change', (e) => {
  state.job = e.target.value;
  state.dim = '';
  refreshJob().catch((err) => readFailed(err));
});
$('dim').addEventListener('change', (e) => {
  state.dim = e.target.value;
  refreshJob().catch((err) => readFailed(err));
});
try {
  $('findings-filter').value = decodeURIComponent(location.hash.slice(1));
} catch (e) {
  showFilterError('the link\'s #fragment is not a filter');
}
$('findings-filter').addEventListener('change', (e) => {
  history.replaceState(null, '', e.target.value ? '#' + encodeURIComponent(e.target.value) : location.pathname);
  getFindings().then(drawFindings).catch((err) => readFailed(err));
});
$('heatmap-canvas').addEventListener('mousemove', showCellAt);
$('heatmap-canvas').addEventListener('click', showCellAt);

// One poll at a time: the next starts POLL_MS after this one started, or a
// quarter of POLL_MS after it ended when it took longer; never while one is
// still running, so a slow collector or a big fabric cannot pile them up.
async function poll() {
  const start = performance.now();
  await refresh();
  setTimeout(poll, Math.max(POLL_MS / 4, POLL_MS - (performance.now() - start)));
}
poll();
