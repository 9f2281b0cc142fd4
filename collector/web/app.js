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

const state = { metric: 'rx_bytes', job: '', dim: '', fabric: null, jobs: [] };

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

async function getJson(url) {
  const r = await fetch(url, { cache: 'no-store' });
  const body = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(url + ': ' + (body.error || r.status));
  return body;
}

// --- findings --------------------------------------------------------------

function evidenceText(f) {
  const parts = [];
  for (const [k, v] of Object.entries(f.evidence || {})) {
    parts.push(k + '=' + (typeof v === 'number' ? +v.toPrecision(4) : v));
  }
  return parts.join(', ');
}

function findingRow(f) {
  const where = f.device || '';
  return el('tr', { class: 'finding-row ' + f.state, 'data-id': f.id, 'data-kind': f.kind },
    el('td', { class: 'sev ' + f.severity, text: f.severity }),
    el('td', { class: 'kind', text: f.kind }),
    el('td', { text: f.job || '–' }),
    el('td', { text: f.group || '–' }),
    el('td', { class: 'node', text: f.node || '–' }),
    el('td', { class: 'device', text: where || '–' }),
    el('td', { text: duration(f.duration_seconds) }),
    el('td', { class: 'summary' },
      el('div', { text: f.summary }),
      el('div', { class: 'evidence', text: f.id + ': ' + evidenceText(f) })));
}

function drawFindings(data) {
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
function ratioColour(ratio) {
  const t = Math.max(-1, Math.min(1, Math.log2(ratio) / 2));
  if (t >= 0) {
    return `rgb(${240 - 25 * t}, ${240 - 192 * t}, ${240 - 209 * t})`;
  }
  const u = -t;
  return `rgb(${240 - 170 * u}, ${240 - 130 * u}, ${240 - 20 * u})`;
}

function fractionColour(f) {
  const t = Math.max(0, Math.min(1, f / 0.5));
  return `rgb(${240 - 25 * t}, ${240 - 192 * t}, ${240 - 209 * t})`;
}

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

function drawHeatmap(fabric) {
  const m = metricInfo(fabric);
  const values = fabric.values[m.name] || [];
  const medians = fabric.rail_medians[m.name] || [];
  const outlined = new Map();
  for (const o of fabric.outlined) outlined.set(o.node + '\u0000' + o.rail, o.findings);
  const down = new Set(fabric.links_down.map((d) => d.node + '\u0000' + d.rail));

  const head = el('tr', {}, el('th', { class: 'node', text: 'node \\ rail' }),
    ...fabric.rails.map((r) => el('th', { text: r })));
  const rows = [head];
  fabric.nodes.forEach((node, n) => {
    const cells = fabric.rails.map((rail, r) => {
      const v = values[n] ? values[n][r] : null;
      const key = node + '\u0000' + rail;
      const findings = outlined.get(key);
      const classes = ['cell'];
      let text = '';
      let colour = null;
      if (v === null || v === undefined) {
        classes.push('absent');
        text = '–';
      } else if (m.unit === 'fraction') {
        colour = fractionColour(v);
        text = formatValue(v, m.unit);
        if (v >= HOT_FRACTION) classes.push('hot');
      } else {
        const median = medians[r];
        if (median > 0) {
          const ratio = v / median;
          colour = ratioColour(ratio);
          text = ratio.toFixed(ratio >= 10 ? 0 : 2) + '×';
          if (ratio >= HOT_RATIO) classes.push('hot');
          if (ratio <= COLD_RATIO) classes.push('cold');
        } else {
          text = formatValue(v, m.unit);
        }
      }
      if (findings) classes.push('finding');
      if (down.has(key)) classes.push('down');
      let title = `${node} ${rail}: ${formatValue(v, m.unit)}`;
      if (m.unit !== 'fraction' && medians[r] !== null && medians[r] !== undefined) {
        title += ` (rail median ${formatValue(medians[r], m.unit)})`;
      }
      if (findings) title += '\n' + findings.map((f) => `${f.id} ${f.kind} (${f.severity})`).join('\n');
      const td = el('td', { class: classes.join(' '), 'data-node': node, 'data-rail': rail, title, text });
      if (colour) td.style.background = colour;
      return td;
    });
    rows.push(el('tr', {}, el('th', { class: 'node', text: node }), ...cells));
  });
  $('heatmap').replaceChildren(...rows);
  $('no-fabric').hidden = fabric.nodes.length > 0;
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
    $('job-summary').replaceChildren();
    $('groups').replaceChildren();
    return;
  }
  const q = state.dim ? '?dim=' + encodeURIComponent(state.dim) : '';
  const job = await getJson('/api/v1/jobs/' + encodeURIComponent(state.job) + q);
  drawJob(job);
}

async function refresh() {
  try {
    const [findings, fabric, jobs] = await Promise.all([
      getJson('/api/v1/findings'), getJson('/api/v1/fabric'), getJson('/api/v1/jobs')]);
    state.fabric = fabric;
    drawFindings(findings);
    drawMetricSelect(fabric);
    drawHeatmap(fabric);
    drawUplinks(fabric);
    drawJobSelect(jobs.jobs);
    await refreshJob();
    setStatus(true, 'live');
    $('updated').textContent = 'updated ' + new Date(findings.generated || Date.now()).toLocaleTimeString();
  } catch (e) {
    setStatus(false, 'collector unreachable: ' + e.message);
  }
}

$('metric').addEventListener('change', (e) => {
  state.metric = e.target.value;
  if (state.fabric) drawHeatmap(state.fabric);
});
$('job').addEventListener('change', (e) => {
  state.job = e.target.value;
  state.dim = '';
  refreshJob().catch((err) => setStatus(false, err.message));
});
$('dim').addEventListener('change', (e) => {
  state.dim = e.target.value;
  refreshJob().catch((err) => setStatus(false, err.message));
});

refresh();
setInterval(refresh, POLL_MS);
