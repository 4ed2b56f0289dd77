// The report's callbacks share this code.  Arguments (Bokeh models): objects, comparisons,
// pairs (edge -> annotator code, sorted by edge; null without annotator ids), annotator_names,
// and the outputs shown (table), near/far (segments), marked (ringed, named objects), info (text).
const MAX_ROWS = 2000, MAX_DRAWN = 50, MAX_NAMED = 12;
const C = comparisons.data, O = objects.data;
const COLOUR = {flagged: "#d62728", agrees: "#2ca02c", contradicted: "#ff7f0e"};
if (info.tags.length === 0) info.tags = [info.text];  // the initial help text, shown again on deselect

function esc(s) { return String(s).replace(/[&<>"]/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c])); }
function objectName(o) { return O.name[o] || ("#" + o); }
function describe(e) {
  const i = C.i[e], j = C.j[e], l = C.l[e], k = C.k[e];
  return i === l ? `${objectName(i)} closer to ${objectName(j)} than to ${objectName(k)}`
                 : `d(${objectName(i)}, ${objectName(j)}) < d(${objectName(l)}, ${objectName(k)})`;
}
function annotatorsOf(e) {
  if (pairs === null) return "";
  const E = pairs.data.edge, code = pairs.data.code;
  let lo = 0, hi = E.length;  // first pair of edge e
  while (lo < hi) { const mid = (lo + hi) >> 1; if (E[mid] < e) lo = mid + 1; else hi = mid; }
  const out = [];
  for (let r = lo; r < E.length && E[r] === e; r++) out.push(annotator_names[code[r]]);
  return out.join(";");
}
// worst first: flagged, then larger |gamma|, then those the map contradicts
function worse(a, b) {
  return (C.flagged[b] - C.flagged[a]) || (Math.abs(C.gamma[b]) - Math.abs(C.gamma[a])) || (C.agrees[a] - C.agrees[b]);
}
function clear() {
  shown.data = {edge: [], text: [], votes: [], opposing: [], gamma: [], flagged: [], agrees: [], annotators: []};
  near.data = {x0: [], y0: [], x1: [], y1: [], colour: []};
  far.data = {x0: [], y0: [], x1: [], y1: []};
  marked.data = {x: [], y: [], name: []};
  info.text = info.tags[0];
}
function showEdges(edges, heading, focus) {
  edges = Array.from(edges).sort(worse);
  if (edges.length === 0) { clear(); info.text = heading + ": no comparisons"; return; }
  const rows = edges.slice(0, MAX_ROWS), drawn = edges.slice(0, MAX_DRAWN);
  shown.data = {
    edge: rows, text: rows.map(describe), votes: rows.map((e) => C.votes[e]),
    opposing: rows.map((e) => C.opposing[e]), gamma: rows.map((e) => C.gamma[e]),
    flagged: rows.map((e) => (C.flagged[e] ? "yes" : "")), agrees: rows.map((e) => (C.agrees[e] ? "yes" : "no")),
    annotators: rows.map(annotatorsOf)};
  const X = O.x, Y = O.y, seg = (a, b) => [X[a], Y[a], X[b], Y[b]];
  const nd = {x0: [], y0: [], x1: [], y1: [], colour: []}, fd = {x0: [], y0: [], x1: [], y1: []};
  const named = new Map();
  if (focus !== undefined) named.set(focus, true);
  drawn.forEach((e, r) => {
    const [a0, b0, a1, b1] = seg(C.i[e], C.j[e]), [c0, d0, c1, d1] = seg(C.l[e], C.k[e]);
    nd.x0.push(a0); nd.y0.push(b0); nd.x1.push(a1); nd.y1.push(b1);
    nd.colour.push(C.flagged[e] ? COLOUR.flagged : C.agrees[e] ? COLOUR.agrees : COLOUR.contradicted);
    fd.x0.push(c0); fd.y0.push(d0); fd.x1.push(c1); fd.y1.push(d1);
    for (const o of [C.i[e], C.j[e], C.l[e], C.k[e]]) if (!named.has(o)) named.set(o, r < MAX_NAMED);
  });
  near.data = nd; far.data = fd;
  const objs = Array.from(named.keys());
  marked.data = {x: objs.map((o) => X[o]), y: objs.map((o) => Y[o]),
                 name: objs.map((o) => (named.get(o) ? objectName(o) : ""))};
  let nf = 0, nc = 0;
  for (const e of edges) { nf += C.flagged[e] ? 1 : 0; nc += C.agrees[e] ? 0 : 1; }
  info.text = `${heading}: <b>${edges.length}</b> comparison${edges.length === 1 ? "" : "s"}, ` +
    `<b style="color:${COLOUR.flagged}">${nf} flagged</b>, ` +
    `<b style="color:${COLOUR.contradicted}">${nc} contradicted by the map</b>` +
    (edges.length > drawn.length ? `; the ${drawn.length} worst drawn` : "") +
    (edges.length > rows.length ? `, the ${rows.length} worst listed` : "") +
    `. <span style="color:#555">Solid: the pair called closer; dashed: the pair called farther.</span>`;
}
function showObject(indices) {
  if (indices.length === 0) { clear(); return; }
  const o = indices[0], edges = [];
  for (let e = 0; e < C.i.length; e++)
    if (C.i[e] === o || C.j[e] === o || C.l[e] === o || C.k[e] === o) edges.push(e);
  const label = O.label[o] ? ` (${esc(O.label[o])})` : "";
  showEdges(edges, `<b>${esc(objectName(o))}</b>${label}`, o);
}
function showAnnotator(indices) {
  if (indices.length === 0 || pairs === null) { clear(); return; }
  const a = indices[0], E = pairs.data.edge, code = pairs.data.code, edges = [];
  for (let r = 0; r < code.length; r++) if (code[r] === a) edges.push(E[r]);
  showEdges(edges, `annotator <b>${esc(annotator_names[a])}</b>`);
}
