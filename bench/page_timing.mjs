// The collector's page in headless Chromium, timed in real time through the
// DevTools protocol (tests/system/page_scale_test.py checks it under
// virtual time, where the page's own clock stands still). Opens URL, reads
// the page's #page-stats every 250 ms for SECONDS, then prints, as JSON:
// when the heatmap was first drawn (ms after navigation), each draw's
// duration (the first and the updates), the polls' durations, the element
// count and Chromium's own metrics (Nodes, JSHeapUsedSize, ScriptDuration,
// LayoutDuration, TaskDuration over the run).
//
//   build/bench/fabricdiag-web-fixture --nodes=8512 &     (prints its port)
//   node --experimental-websocket bench/page_timing.mjs http://127.0.0.1:PORT/ 30
//
// Node 20 needs --experimental-websocket; Node 22 has WebSocket built in.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const [url, secondsArg] = process.argv.slice(2);
if (!url) {
  console.error('usage: page_timing.mjs URL [SECONDS]');
  process.exit(2);
}
const seconds = Number(secondsArg || 30);
const profile = mkdtempSync(join(tmpdir(), 'page-timing.'));
const chrome = spawn('chromium', ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
  '--enable-precise-memory-info', '--window-size=1400,1600', `--user-data-dir=${profile}`,
  '--remote-debugging-port=0', 'about:blank'], { stdio: ['ignore', 'ignore', 'pipe'] });

const wsUrl = await new Promise((resolve, reject) => {
  let err = '';
  chrome.stderr.on('data', (d) => {
    err += d;
    const m = err.match(/DevTools listening on (ws:\S+)/);
    if (m) resolve(m[1]);
  });
  chrome.on('exit', (code) => reject(new Error(`chromium exited ${code}: ${err}`)));
});

const ws = new WebSocket(wsUrl);
await new Promise((resolve) => ws.addEventListener('open', resolve));
let nextId = 1;
const pending = new Map();
ws.addEventListener('message', (e) => {
  const msg = JSON.parse(e.data);
  if (msg.id && pending.has(msg.id)) {
    pending.get(msg.id)(msg);
    pending.delete(msg.id);
  }
});
function send(method, params = {}, sessionId = undefined) {
  const id = nextId++;
  ws.send(JSON.stringify({ id, method, params, sessionId }));
  return new Promise((resolve, reject) => pending.set(id, (m) =>
    (m.error ? reject(new Error(`${method}: ${m.error.message}`)) : resolve(m.result))));
}

const { targetId } = await send('Target.createTarget', { url: 'about:blank' });
const { sessionId } = await send('Target.attachToTarget', { targetId, flatten: true });
await send('Performance.enable', {}, sessionId);
await send('Page.enable', {}, sessionId);
await send('Page.navigate', { url }, sessionId);

const evaluate = async (expr) => (await send('Runtime.evaluate',
  { expression: expr, returnByValue: true }, sessionId)).result.value;
const draws = [];
const polls = [];
let last = null;
const end = Date.now() + 1000 * seconds;
while (Date.now() < end) {
  await new Promise((r) => setTimeout(r, 250));
  const s = await evaluate(`(() => { const e = document.getElementById('page-stats');
    return e ? Object.assign({}, e.dataset) : null; })()`);
  if (!s) continue;
  if (!last || s.fabricDraws !== last.fabricDraws) draws.push(Number(s.heatmapMs));
  if (!last || s.polls !== last.polls) polls.push(Number(s.pollMs));
  last = s;
}
const metrics = Object.fromEntries((await send('Performance.getMetrics', {}, sessionId))
  .metrics.map((m) => [m.name, m.value]));
console.log(JSON.stringify({
  url, seconds,
  first_heatmap_at_ms: last ? Number(last.firstHeatmapAtMs) : null,
  heatmap_draw_ms: draws,
  poll_ms: polls,
  polls: last ? Number(last.polls) : 0,
  not_modified: last ? Number(last.notModified) : 0,
  elements: last ? Number(last.domElements) : null,
  chromium: {
    nodes: metrics.Nodes, js_heap_used_bytes: metrics.JSHeapUsedSize,
    script_seconds: metrics.ScriptDuration, layout_seconds: metrics.LayoutDuration,
    task_seconds: metrics.TaskDuration,
  },
}, null, 1));
ws.close();
chrome.kill();
rmSync(profile, { recursive: true, force: true });
process.exit(0);
