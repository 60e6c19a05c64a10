import { readFileSync } from 'node:fs';
const p = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const root = process.argv[3]; const maxDepth = Number(process.argv[4] ?? 4);
const byId = new Map(p.nodes.map((n) => [n.id, n]));
const selfT = new Map(); let total = 0;
for (let i = 0; i < p.samples.length; i++) { selfT.set(p.samples[i], (selfT.get(p.samples[i]) ?? 0) + (p.timeDeltas[i] ?? 0)); total += p.timeDeltas[i] ?? 0; }
const inc = (n) => (selfT.get(n.id) ?? 0) + (n.children ?? []).reduce((a, c) => a + inc(byId.get(c)), 0);
const key = (n) => `${n.callFrame.functionName || '(anon)'} ${n.callFrame.url.split('/').slice(-2).join('/')}:${n.callFrame.lineNumber}`;
// merge: aggregate nodes matching root by key path
const agg = new Map();
function walk(n, path) { const k = key(n); const np = path ? path + ' > ' + k : (k.startsWith(root) ? k : null); if (np) { agg.set(np, (agg.get(np) ?? 0) + (selfT.get(n.id) ?? 0)); } for (const c of n.children ?? []) walk(byId.get(c), np && np.split(' > ').length <= maxDepth ? np : (np ? path : null) ); }
// simpler: collect inclusive per path up to depth
const incl = new Map();
function walk2(n, path) { const k = key(n); let np = null; if (path) np = path.split(' > ').length < maxDepth ? path + ' > ' + k : path; else if (k.startsWith(root)) np = k; if (np) incl.set(np, (incl.get(np) ?? 0) + (selfT.get(n.id) ?? 0)); for (const c of n.children ?? []) walk2(byId.get(c), np); }
walk2(byId.get(p.nodes[0].id), null);
for (const [k, t] of [...incl].sort((a, b) => a[0] < b[0] ? -1 : 1)) if (t / total > 0.002) console.log((t / total * 100).toFixed(1).padStart(5) + '%', k.split(' > ').map((s) => s.split(' ')[0] + '@' + (s.split(' ')[1] ?? '').split('/').pop()).join(' > '));
