// The report's callbacks share this code.  Arguments (Bokeh models): objects; comparisons (i, j,
// k, l only for quadruplets, votes, opposing, flags: bit 0 the map agrees, bit 1 flagged, and
// n_annotators); gamma (edge, value where gamma != 0); pairs (annotator codes in edge order, or
// null without annotator ids) and annotator_names; the outputs: shown (table), near/far
// (segments), marked (ringed, named objects), info (text).
const MAX_ROWS = 2000, MAX_DRAWN = 50, MAX_NAMED = 12;
const C = comparisons.data, O = objects.data, L = C.l !== undefined ? C.l : C.i;
// dense arrays built once per page and kept on the model
function cached(key, build) { if (comparisons[key] === undefined) comparisons[key] = build(); return comparisons[key]; }
const G = cached("_gamma", () => {
  const g = new Float32Array(C.i.length);
  for (let r = 0; r < gamma.data.edge.length; r++) g[gamma.data.edge[r]] = gamma.data.value[r];
  return g;
});
const PTR = pairs === null ? null : cached("_ptr", () => {
  const p = new Int32Array(C.i.length + 1);
  for (let e = 0; e < C.i.length; e++) p[e + 1] = p[e] + C.n_annotators[e];
  return p;
});
const isFlagged = (e) => (C.flags[e] & 2) >> 1, agrees = (e) => C.flags[e] & 1;
const COLOUR = {flagged: "#d62728", agrees: "#2ca02c", contradicted: "#ff7f0e"};
if (info.tags.length === 0) info.tags = [info.text];  // the initial help text, shown again on deselect

function esc(s) { return String(s).replace(/[&<>"]/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c])); }
function objectName(o) { return O.name[o] || ("#" + o); }
function describe(e) {
  const i = C.i[e], j = C.j[e], l = L[e], k = C.k[e];
  return i === l ? `${objectName(i)} closer to ${objectName(j)} than to ${objectName(k)}`
                 : `d(${objectName(i)}, ${objectName(j)}) < d(${objectName(l)}, ${objectName(k)})`;
}
function annotatorsOf(e) {
  if (pairs === null) return "";
  const code = pairs.data.code, out = [];
  for (let r = PTR[e]; r < PTR[e + 1]; r++) out.push(annotator_names[code[r]]);
  return out.join(";");
}
// worst first: flagged, then larger |gamma|, then those the map contradicts
function worse(a, b) {
  return (isFlagged(b) - isFlagged(a)) || (Math.abs(G[b]) - Math.abs(G[a])) || (agrees(a) - agrees(b));
}
function clear() {
  shown.data = {edge: [], text: [], votes: [], opposing: [], gamma: [], flagged: [], agrees: [], annotators: [],
                frequency: []};
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
    opposing: rows.map((e) => C.opposing[e]), gamma: rows.map((e) => G[e]),
    flagged: rows.map((e) => (isFlagged(e) ? "yes" : "")), agrees: rows.map((e) => (agrees(e) ? "yes" : "no")),
    annotators: rows.map(annotatorsOf),
    frequency: rows.map((e) => (C.flag_frequency !== undefined ? C.flag_frequency[e] : NaN))};
  const X = O.x, Y = O.y, seg = (a, b) => [X[a], Y[a], X[b], Y[b]];
  const nd = {x0: [], y0: [], x1: [], y1: [], colour: []}, fd = {x0: [], y0: [], x1: [], y1: []};
  const named = new Map();
  if (focus !== undefined) named.set(focus, true);
  drawn.forEach((e, r) => {
    const [a0, b0, a1, b1] = seg(C.i[e], C.j[e]), [c0, d0, c1, d1] = seg(L[e], C.k[e]);
    nd.x0.push(a0); nd.y0.push(b0); nd.x1.push(a1); nd.y1.push(b1);
    nd.colour.push(isFlagged(e) ? COLOUR.flagged : agrees(e) ? COLOUR.agrees : COLOUR.contradicted);
    fd.x0.push(c0); fd.y0.push(d0); fd.x1.push(c1); fd.y1.push(d1);
    for (const o of [C.i[e], C.j[e], L[e], C.k[e]]) if (!named.has(o)) named.set(o, r < MAX_NAMED);
  });
  near.data = nd; far.data = fd;
  const objs = Array.from(named.keys());
  marked.data = {x: objs.map((o) => X[o]), y: objs.map((o) => Y[o]),
                 name: objs.map((o) => (named.get(o) ? objectName(o) : ""))};
  let nf = 0, nc = 0;
  for (const e of edges) { nf += isFlagged(e); nc += 1 - agrees(e); }
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
    if (C.i[e] === o || C.j[e] === o || L[e] === o || C.k[e] === o) edges.push(e);
  const label = O.label[o] ? ` (${esc(O.label[o])})` : "";
  showEdges(edges, `<b>${esc(objectName(o))}</b>${label}`, o);
}
function showAnnotator(indices) {
  if (indices.length === 0 || pairs === null) { clear(); return; }
  const a = indices[0], code = pairs.data.code, edges = [];
  for (let e = 0; e < C.i.length; e++)
    for (let r = PTR[e]; r < PTR[e + 1]; r++) if (code[r] === a) { edges.push(e); break; }
  showEdges(edges, `annotator <b>${esc(annotator_names[a])}</b>`);
}
