// The timeline of an avout run: lanes of operations, the simulator's events beside them, and
// the checker's findings drawn on top. Reads the JSON in #avout-data (the Rust `view::Page`),
// draws into SVG, redraws only what is in view on zoom and pan. No network, no libraries.
"use strict";
(function () {
  const D = JSON.parse(document.getElementById("avout-data").textContent);
  const parsed = performance.now();
  const $ = (id) => document.getElementById(id);
  const svg = $("main");
  const mini = $("minimap");
  const tip = $("tip");

  // Geometry (pixels).
  const GUTTER = 168, RIGHT = 14, AXIS = 26, PAD = 6, EV = 16, ROW = 18, GAP = 5;
  const hasEvents = D.events.length > 0;
  const KIND_ORDER = { service: 0, server: 1, client: 2, session: 3, nemesis: 4 };
  const EDGE_COLOURS = {
    ww: "#1565c0", wr: "#2e7d32", rw: "#c62828", realtime: "#616161",
    process: "#8d6e63", order: "#1e88e5", stuck: "#d81b60", waits: "#37474f",
  };

  // Lanes top to bottom: the service and servers, the clients, then the rest.
  const laneOrder = D.lanes.map((_, i) => i).sort(
    (a, b) => (KIND_ORDER[D.lanes[a].kind] ?? 9) - (KIND_ORDER[D.lanes[b].kind] ?? 9) || a - b);
  // Lanes with a finding's span get a line under their rows for its label.
  const spanned = new Set(D.findings.flatMap((f) => f.spans.flatMap((s) => s.lanes)));
  // Room above the lanes for a finding's annotations and for arrows arcing over the top lane.
  const hasArrows = D.findings.some((f) => f.arrows.length);
  const hasOverlap = D.findings.some((f) => f.spans.some((s) => s.role === "overlap"));
  const TOP = AXIS + (hasOverlap ? 18 : 0) + (hasArrows ? 36 : 0);
  const lane = [];
  let y = TOP;
  for (const i of laneOrder) {
    const l = D.lanes[i];
    const ev = hasEvents ? EV + 3 : 0;
    const label = spanned.has(i) ? 14 : 0;
    const h = PAD + ev + l.rows * (ROW + GAP) + PAD - (l.rows ? GAP : 0) + label;
    lane[i] = { top: y, ev: y + PAD, rows: y + PAD + ev, height: Math.max(h, 26) };
    y += lane[i].height;
  }
  // Room under the last lane for arrows that arc below (an edge back in time).
  const HEIGHT = y + (hasArrows ? 70 : 8);
  const opTop = (o) => lane[o.lane].rows + o.row * (ROW + GAP);

  // Time.
  const ns = D.axis === "ns";
  const lo = 0;
  const hi = Math.max(D.end, 1);
  let t0 = lo, t1 = hi;
  // The chart's width, read from the layout once per drawing (reading it per bar would cost
  // a layout query each), and the pixels per unit of time it gives.
  let W0 = 0;
  const width = () => W0 || Math.max(svg.clientWidth || 1200, GUTTER + 200);
  const scale = () => (width() - GUTTER - RIGHT) / (t1 - t0);
  let K = 1;
  const X = (t) => GUTTER + (t - t0) * K;
  const endOf = (o) => (o.end === null ? D.end : o.end);

  function fmtAt(t) {
    return ns ? (t / 1e9).toFixed(6) + " s" : "event " + Math.round(t);
  }
  function fmtDur(d) {
    if (!ns) return Math.round(d) + " events";
    if (d >= 1e9) return (d / 1e9).toFixed(3) + " s";
    if (d >= 1e6) return (d / 1e6).toFixed(3) + " ms";
    if (d >= 1e3) return (d / 1e3).toFixed(2) + " µs";
    return Math.round(d) + " ns";
  }
  function tickLabel(t, step) {
    if (!ns) return String(Math.round(t));
    const units = [[1e9, "s"], [1e6, "ms"], [1e3, "µs"], [1, "ns"]];
    const [u, name] = units.find(([u]) => step >= u / 10) || units[3];
    const decimals = Math.max(0, Math.ceil(-Math.log10(step / u) - 1e-9));
    return (t / u).toFixed(Math.min(decimals, 6)) + " " + name;
  }
  function niceStep(span, px) {
    const raw = span / Math.max(px / 110, 1);
    const p = Math.pow(10, Math.floor(Math.log10(raw)));
    const m = raw / p;
    const step = (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
    return ns || step >= 1 ? step : 1;
  }

  // The selected finding.
  let sel = D.findings.length ? 0 : -1;
  let marks = new Map(), related = new Set(), pinned = -1;
  function select(i) {
    sel = i;
    marks = new Map();
    related = new Set();
    if (i >= 0) {
      for (const m of D.findings[i].marks) marks.set(m.op, m);
      for (const e of D.findings[i].events) related.add(e);
    }
    document.querySelectorAll("#findings li[data-finding]").forEach((li) =>
      li.classList.toggle("selected", Number(li.dataset.finding) === i));
    document.body.dataset.finding = String(i);
  }

  function focusRange(i) {
    const [a, b] = D.findings[i].focus;
    const span = Math.max(b - a, (hi - lo) / 200, ns ? 1000 : 2);
    return [a - span * 0.15, b + span * 0.15];
  }
  function setView(a, b) {
    const full = hi - lo;
    const minSpan = ns ? 1000 : 2;
    let span = Math.min(Math.max(b - a, minSpan), full * 1.5);
    let mid = (a + b) / 2;
    mid = Math.min(Math.max(mid, lo - full * 0.25), hi + full * 0.25);
    t0 = mid - span / 2;
    t1 = mid + span / 2;
    schedule();
  }
  const fit = () => setView(lo - (hi - lo) * 0.01, hi + (hi - lo) * 0.01);
  const focus = () => (sel >= 0 ? setView(...focusRange(sel)) : fit());

  // Drawing.
  const esc = (s) => String(s).replace(/[&<>"]/g, (c) =>
    ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]));
  const cut = (s, px) => {
    const n = Math.floor(px / 6.3);
    return s.length <= n ? s : n > 2 ? s.slice(0, n - 1) + "…" : "";
  };

  function defs() {
    let out = '<defs><pattern id="hatch" width="8" height="8" patternUnits="userSpaceOnUse" ' +
      'patternTransform="rotate(45)"><rect width="8" height="8" fill="#d81b60" fill-opacity=".10"/>' +
      '<line x1="0" y1="0" x2="0" y2="8" stroke="#d81b60" stroke-opacity=".45" stroke-width="3"/>' +
      "</pattern>";
    for (const [k, c] of Object.entries(EDGE_COLOURS)) {
      out += `<marker id="head-${k}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" ` +
        `markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="${c}"/></marker>`;
    }
    return out + "</defs>";
  }

  function drawAxis(W) {
    let out = "";
    const step = niceStep(t1 - t0, W - GUTTER - RIGHT);
    for (let t = Math.ceil(t0 / step) * step; t <= t1; t += step) {
      const x = X(t);
      out += `<line class="tick" x1="${x}" x2="${x}" y1="${AXIS - 4}" y2="${HEIGHT}"/>`;
      out += `<text class="tick-label" x="${x + 3}" y="${AXIS - 9}">${esc(tickLabel(t, step))}</text>`;
    }
    return out;
  }

  function drawLaneBackgrounds(W) {
    let out = "";
    laneOrder.forEach((i, n) => {
      const L = lane[i];
      out += `<rect class="lane-bg${n % 2 ? " alt" : ""}" x="0" y="${L.top}" width="${W}" height="${L.height}"/>`;
    });
    return out;
  }

  function drawSpans() {
    if (sel < 0) return ["", ""];
    let out = "", labels = "";
    const spans = D.findings[sel].spans.slice().sort((a, b) =>
      (a.role === "overlap") - (b.role === "overlap"));
    for (const s of spans) {
      const xa = X(s.start), xb = Math.max(X(s.end), xa + 2);
      const tops = s.lanes.map((l) => lane[l].top + 2);
      const bottoms = s.lanes.map((l) => lane[l].top + lane[l].height - 2);
      for (const l of s.lanes) {
        const L = lane[l];
        out += `<rect class="span ${s.role}" data-span="${esc(s.label)}" x="${xa}" y="${L.top + 2}" ` +
          `width="${xb - xa}" height="${L.height - 4}"/>`;
      }
      if (s.role === "overlap") {
        const top = Math.min(...tops), bottom = Math.max(...bottoms);
        out += `<line class="span-edge" x1="${xa}" x2="${xa}" y1="${top}" y2="${bottom}"/>`;
        out += `<line class="span-edge" x1="${xb}" x2="${xb}" y1="${top}" y2="${bottom}"/>`;
        // Above every lane, where nothing else is written.
        out += `<line class="span-edge" x1="${xa}" x2="${xa}" y1="${AXIS + 2}" y2="${top}"/>`;
        const lx = Math.max(xa, GUTTER) + 4;
        labels += `<text class="span-label overlap" x="${lx}" y="${AXIS + 14}">` +
          `${esc(cut(s.label, width() - RIGHT - lx))}</text>`;
      } else {
        const L = lane[s.lanes[0]];
        labels += `<text class="span-label ${s.role}" x="${Math.max(xa, GUTTER) + 4}" y="${L.top + L.height - 5}">` +
          `${esc(cut(s.label, Math.min(xb, width()) - Math.max(xa, GUTTER) - 8))}</text>`;
      }
    }
    return [out, labels];
  }

  function drawEvents() {
    let out = "", labels = "";
    const lastLabel = new Map();
    D.events.forEach((e, i) => {
      const end = e.end ?? e.start;
      if (end < t0 || e.start > t1) return;
      const L = lane[e.lane];
      const rel = related.has(i) ? " related" : "";
      const x = X(e.start);
      const cls = `ev ${esc(e.kind)} ${esc(e.name)}${rel}`;
      if (e.kind === "state") {
        // Connected is the normal state, closed the normal end: neither is drawn.
        if (e.name === "connected" || e.name === "closed") return;
        const xb = X(e.end ?? D.end);
        out += `<rect class="${cls}" data-ev="${i}" x="${x}" y="${L.ev}" width="${Math.max(xb - x, 2)}" ` +
          `height="${EV}"/>`;
        // At the band's end: its start is where the fault that caused it has its label.
        const right = Math.min(xb, width() - RIGHT) - 4;
        if (right - Math.max(x, GUTTER) > 150) labels += `<text class="ev-label state" x="${right}" ` +
          `y="${L.ev + EV - 4}" text-anchor="end">${esc(e.name)}</text>`;
        return;
      }
      if (e.end !== null && e.end > e.start) {
        out += `<rect class="ev ${esc(e.kind)} span-ev${rel}" data-ev="${i}" x="${x}" y="${L.ev + 3}" ` +
          `width="${Math.max(X(e.end) - x, 2)}" height="${EV - 6}"/>`;
      }
      const known = ["fault", "nemesis", "connect", "watch", "timer", "state"].includes(e.kind);
      const k = known ? cls : `ev other${rel}`;
      if (e.kind === "watch") {
        out += `<circle class="${k}" data-ev="${i}" cx="${x}" cy="${L.ev + EV / 2}" r="3"/>`;
      } else if (e.kind === "connect" || e.kind === "timer") {
        out += `<rect class="${k}" data-ev="${i}" x="${x - 1}" y="${L.ev + 2}" width="3" height="${EV - 4}"/>`;
      } else {
        const s = rel ? 7 : 5.5;
        out += `<path class="${k}" data-ev="${i}" d="M${x - s},${L.ev + 1} L${x + s},${L.ev + 1} ` +
          `L${x},${L.ev + EV - 1} z"/>`;
        const free = (lastLabel.get(e.lane) ?? -Infinity) < x;
        if (rel || free) {
          const text = e.name;
          labels += `<text class="ev-label${rel}" x="${x + s + 2}" y="${L.ev + EV - 4}">${esc(text)}</text>`;
          lastLabel.set(e.lane, x + s + 8 + text.length * 6.5);
        }
      }
    });
    return out + labels;
  }

  // Operations: each a bar, except that neighbours in one row closer than a pixel and a
  // half, alike and unmarked, are drawn as one bar (a "run"): at a glance over thousands of
  // operations there is nothing more to see, and the browser lays out far fewer elements.
  function drawOps(W) {
    let out = "", labels = "";
    const dim = sel >= 0 && $("dim").checked;
    const runs = new Map();
    let shown = 0;
    const flush = (key) => {
      const r = runs.get(key);
      if (!r) return;
      runs.delete(key);
      if (r.count === 1) {
        out += bar(r.first, r.xa, r.xb);
        return;
      }
      out += `<rect class="op ${r.outcome} run${dim ? " dim" : ""}" data-run="${r.first},${r.last},${r.count}" ` +
        `x="${r.xa}" y="${r.top}" width="${Math.max(r.xb - r.xa, 2)}" height="${ROW}" rx="2"/>`;
    };
    const bar = (i, xa, xb) => {
      const o = D.ops[i];
      const w = Math.max(xb - xa, 2);
      const top = opTop(o);
      const m = marks.get(i);
      let cls = `op ${o.outcome}`;
      if (o.end === null) cls += " never";
      if (m) cls += ` mark ${m.role}`;
      else if (dim) cls += " dim";
      if (i === pinned) cls += " pinned";
      const skip = m && m.label && chipInside(o, m, W) ? chipWidth(m) + 4 : 0;
      if (w - skip > 34) {
        const text = cut(`${o.f} ${o.value}`, w - skip - 8);
        if (text) labels += `<text class="op-label${m || !dim ? "" : " dim"}" x="${xa + 4 + skip}" ` +
          `y="${top + ROW - 5}">${esc(text)}</text>`;
      }
      return `<rect class="${cls}" data-op="${i}" x="${xa}" y="${top}" width="${w}" height="${ROW}" rx="2"/>`;
    };
    for (let i = 0; i < D.ops.length; i++) {
      const o = D.ops[i];
      const end = endOf(o);
      if (end < t0 || o.start > t1) continue;
      shown++;
      const xa = Math.max(X(o.start), GUTTER - 4);
      const xb = Math.min(X(end), W + 4);
      const key = o.lane * 4096 + o.row;
      if (marks.has(i) || i === pinned || o.end === null) {
        flush(key);
        out += bar(i, xa, xb);
        continue;
      }
      const r = runs.get(key);
      if (r && r.outcome === o.outcome && xa <= r.xb + 1.5 && xb - xa < 6 && r.xb - r.xa < 200) {
        r.xb = Math.max(r.xb, xb);
        r.last = i;
        r.count++;
        continue;
      }
      flush(key);
      runs.set(key, { first: i, last: i, count: 1, xa, xb, outcome: o.outcome, top: opTop(o) });
    }
    for (const key of [...runs.keys()]) flush(key);
    return [out + labels, shown];
  }

  function anchor(o, W, below) {
    const xa = Math.max(X(o.start), GUTTER), xb = Math.min(X(endOf(o)), W - RIGHT);
    const x = xb >= xa ? (xa + xb) / 2 : X(o.start);
    const top = opTop(o);
    return [x, below ? top + ROW : top];
  }

  function drawArrows(W) {
    if (sel < 0) return "";
    let out = "", labels = "";
    for (const [n, a] of D.findings[sel].arrows.entries()) {
      const oa = D.ops[a.from], ob = D.ops[a.to];
      const [from, to] = a.at || [Math.min(oa.start, ob.start), Math.max(endOf(oa), endOf(ob))];
      if (Math.max(from, to) < t0 || Math.min(from, to) > t1) continue;
      const back = a.at ? a.at[1] < a.at[0] : ob.start < oa.start;
      let [ax, ay] = anchor(oa, W, back);
      let [bx, by] = anchor(ob, W, back);
      if (a.at) {
        ax = X(a.at[0]);
        bx = X(a.at[1]);
      }
      if (Math.abs(ax - bx) < 4 && ay === by) { ax -= 6; bx += 6; }
      const room = back ? HEIGHT - Math.max(ay, by) - 8 : Math.min(ay, by) - AXIS - 4;
      // Arrows that start together fan out rather than run on top of one another.
      const fan = 1 + 0.3 * (n % 3);
      const h = Math.max(Math.min(90 * fan, (22 + 0.18 * Math.abs(bx - ax)) * fan, room / 0.75), 8) *
        (back ? -1 : 1);
      const d = `M${ax},${ay} C${ax},${ay - h} ${bx},${by - h} ${bx},${by}`;
      out += `<path class="arrow ${esc(a.kind)}" data-ar="${n}" d="${d}" ` +
        `marker-end="url(#head-${EDGE_COLOURS[a.kind] ? a.kind : "order"})"/>`;
      if (a.label) {
        const lx = (ax + bx) / 2, ly = (ay + by) / 2 - 0.75 * h + (back ? 12 : -3);
        labels += `<text class="arrow-label" x="${lx}" y="${ly}" text-anchor="middle" ` +
          `fill="${EDGE_COLOURS[a.kind] || "#333"}">${esc(a.label)}</text>`;
      }
    }
    return out + labels;
  }

  // A mark's label: inside its bar at the start when the bar has room, above it otherwise.
  const chipWidth = (m) => m.label.length * 6.6 + 8;
  function chipInside(o, m, W) {
    const xa = Math.max(X(o.start), GUTTER), xb = Math.min(X(endOf(o)), W);
    return xb - xa > chipWidth(m) + 24;
  }
  function drawChips(W) {
    if (sel < 0) return "";
    let out = "";
    for (const [op, m] of marks) {
      const o = D.ops[op];
      if (endOf(o) < t0 || o.start > t1 || !m.label) continue;
      const x = Math.max(X(o.start), GUTTER) + 2;
      if (x > W - RIGHT) continue;
      const top = opTop(o);
      const y = chipInside(o, m, W) ? top + 2 : top - 13;
      out += `<rect class="chip-bg ${m.role}" x="${x}" y="${y}" width="${chipWidth(m)}" height="14" rx="2"/>`;
      out += `<text class="chip" x="${x + 4}" y="${y + 11}">${esc(m.label)}</text>`;
    }
    return out;
  }

  function drawGutter() {
    let out = `<rect class="gutter" x="0" y="0" width="${GUTTER - 6}" height="${HEIGHT}"/>`;
    out += `<line class="gutter-rule" x1="${GUTTER - 6}" x2="${GUTTER - 6}" y1="0" y2="${HEIGHT}"/>`;
    for (const i of laneOrder) {
      const l = D.lanes[i], L = lane[i];
      out += `<text class="lane-name" x="10" y="${L.top + 16}" data-lane="${i}">${esc(cut(l.name, GUTTER - 20))}</text>`;
      const note = l.kind === "client" ? l.note.split(";")[0] : l.kind;
      out += `<text class="lane-note" x="10" y="${L.top + 29}" data-lane="${i}">${esc(cut(note, GUTTER - 20))}</text>`;
    }
    out += `<text class="tick-label" x="10" y="${AXIS - 9}">${ns ? "time" : "event"}</text>`;
    return out;
  }

  let queued = false, first = true;
  function schedule() {
    if (!queued) { queued = true; requestAnimationFrame(render); }
  }
  function render() {
    queued = false;
    W0 = 0;
    const W = (W0 = width());
    K = scale();
    svg.setAttribute("height", HEIGHT);
    svg.setAttribute("viewBox", `0 0 ${W} ${HEIGHT}`);
    const [ops, shown] = drawOps(W);
    const [spans, spanLabels] = drawSpans();
    svg.innerHTML = defs() + drawLaneBackgrounds(W) + drawAxis(W) + spans + drawEvents() +
      ops + spanLabels + drawArrows(W) + drawChips(W) + drawGutter();
    $("range").textContent = `${fmtAt(t0)} – ${fmtAt(t1)} · ${shown} of ${D.ops.length} operations in view`;
    drawMinimap();
    if (first) {
      first = false;
      // Milliseconds since the page began loading: when its data was parsed, and drawn.
      document.body.dataset.parsedMs = parsed.toFixed(1);
      document.body.dataset.renderMs = performance.now().toFixed(1);
      document.body.dataset.rendered = "1";
      // The frame after next begins once the first drawing was painted.
      requestAnimationFrame(() => requestAnimationFrame(() => {
        document.body.dataset.paintedMs = performance.now().toFixed(1);
      }));
    }
  }

  // The minimap: the whole run, its density per lane, the findings and faults, the window.
  let miniBase = null;
  function drawMinimap() {
    const W = mini.clientWidth || width(), H = 46;
    const mx = (t) => ((t - lo) / (hi - lo)) * (W - 2) + 1;
    if (!miniBase || miniBase.W !== W) {
      const clients = laneOrder.filter((i) => D.lanes[i].rows > 0);
      const per = (H - 12) / Math.max(clients.length, 1);
      const paths = { ok: "", fail: "", info: "" };
      const row = new Map(clients.map((l, n) => [l, 6 + n * per + per / 2]));
      for (const o of D.ops) {
        const yy = row.get(o.lane);
        if (yy === undefined) continue;
        const a = mx(o.start), b = Math.max(mx(endOf(o)), a + 0.7);
        paths[o.outcome] += `M${a.toFixed(1)},${yy.toFixed(1)}H${b.toFixed(1)}`;
      }
      let out = "";
      for (const k of ["ok", "info", "fail"]) {
        out += `<path class="mm-op" d="${paths[k]}" style="stroke:var(--${k}-line)" ` +
          `stroke-width="${Math.max(1, Math.min(per - 1, 4))}"/>`;
      }
      D.events.forEach((e) => {
        if (e.kind === "fault" || e.kind === "nemesis") {
          out += `<rect class="mm-fault" x="${mx(e.start)}" y="${H - 5}" width="1.5" height="5"/>`;
        }
      });
      for (const f of D.findings) {
        for (const m of f.marks) {
          out += `<rect class="mm-mark" x="${mx(D.ops[m.op].start)}" y="0" width="2" height="6"/>`;
        }
      }
      miniBase = { W, out };
    }
    const a = Math.max(mx(t0), 0), b = Math.min(mx(t1), W);
    mini.setAttribute("viewBox", `0 0 ${W} ${H}`);
    mini.innerHTML = miniBase.out +
      `<rect class="mm-win" x="${a}" y="0.5" width="${Math.max(b - a, 3)}" height="${H - 1}"/>`;
  }

  // The side: findings, report, legend.
  function fillSide() {
    $("title").textContent = D.title;
    const badge = $("badge");
    badge.textContent = D.verdict.valid ? "VALID" : "ANOMALY";
    badge.className = "badge " + (D.verdict.valid ? "valid" : "invalid");
    $("checker").textContent = D.verdict.checker;
    $("about").innerHTML = D.about.map(esc).join("<br>");
    $("report").textContent = D.verdict.report.join("\n");
    const list = $("findings");
    if (!D.findings.length) {
      list.innerHTML = `<li class="none">${D.verdict.valid ? "No anomaly." :
        "The checker's report names no operations to draw; it is below."}</li>`;
      if (!D.verdict.valid) $("report-box").open = true;
    }
    D.findings.forEach((f, i) => {
      const li = document.createElement("li");
      li.dataset.finding = String(i);
      li.dataset.findingOps = f.marks.map((m) => m.op).join(",");
      // A fault on the lane of an operation the finding marks, while it ran, is "during".
      const during = (ev) => f.marks.some((m) => {
        const o = D.ops[m.op];
        return o.lane === ev.lane && ev.start >= o.start && ev.start <= endOf(o);
      });
      const say = (ev) => `${ev.name} on ${D.lanes[ev.lane].name} at ${fmtAt(ev.start)}`;
      const evs = f.events.map((e) => D.events[e]);
      const faults = [];
      if (evs.some(during)) faults.push("during it: " + evs.filter(during).map(say).join("; "));
      if (evs.some((e) => !during(e))) faults.push("before: " + evs.filter((e) => !during(e)).map(say).join("; "));
      const ops = f.marks.slice(0, 4).map((m) => {
        const o = D.ops[m.op];
        return `${m.label}: ${D.lanes[o.lane].name} ${o.f}`;
      });
      li.innerHTML = `<span class="name">${esc(f.name)}</span>${esc(f.title)}` +
        (ops.length ? `<div class="ops">${esc(ops.join(" · "))}${f.marks.length > 4 ? " …" : ""}</div>` : "") +
        faults.map((t) => `<div class="faults">faults ${esc(t)}</div>`).join("");
      li.title = f.text;
      li.addEventListener("click", () => { select(i); focus(); });
      list.appendChild(li);
    });
    const sw = (c, label) => `<span class="item"><span class="sw" style="background:${c}"></span>${label}</span>`;
    const line = (k, label) => `<span class="item"><span class="sw" style="background:${EDGE_COLOURS[k]};height:3px"></span>${label}</span>`;
    $("legend").innerHTML = "<h2>Legend</h2>" +
      sw("var(--ok)", "ok") + sw("var(--fail)", "fail") + sw("var(--info)", "info (unknown)") + "<br>" +
      sw("var(--culprit)", "breaks the rule") + sw("var(--party)", "takes part") + sw("var(--order)", "linearized") + "<br>" +
      line("ww", "ww") + line("wr", "wr") + line("rw", "rw") + line("realtime", "realtime") + line("process", "process") +
      line("waits", "waits on") + "<br>" +
      sw("var(--fault)", "fault") + sw("#cfd8dc", "disconnected") + sw("#ef9a9a", "expired") +
      sw("#64b5f6", "watch") + sw("#43a047", "connect");
  }

  // Hover and pin.
  function describe(target) {
    if (target.dataset.op !== undefined) {
      const i = Number(target.dataset.op), o = D.ops[i];
      const m = marks.get(i);
      const end = o.end === null ? "never completed" : `${fmtAt(o.end)} (${fmtDur(o.end - o.start)})`;
      return `process ${o.process} · ${D.lanes[o.lane].name}\n${o.f} ${o.value}` +
        (o.key ? `\nkey ${o.key}` : "") + `\n${o.outcome} · ${fmtAt(o.start)} → ${end}\nline ${o.line}` +
        (m ? `\n\n${m.role}: ${m.label}` : "");
    }
    if (target.dataset.ev !== undefined) {
      const e = D.events[Number(target.dataset.ev)];
      const span = e.end !== null ? ` for ${fmtDur(e.end - e.start)}` : "";
      return `${e.kind} ${e.name} · ${D.lanes[e.lane].name}\nat ${fmtAt(e.start)}${span}` +
        (e.client !== undefined ? `\nsimulator session c${e.client}` : "") + (e.detail ? `\n${e.detail}` : "");
    }
    if (target.dataset.ar !== undefined) {
      const a = D.findings[sel].arrows[Number(target.dataset.ar)];
      return `${a.kind}: ${a.detail}`;
    }
    if (target.dataset.run !== undefined) {
      const [a, b, n] = target.dataset.run.split(",").map(Number);
      return `${n} ${D.ops[a].outcome} operations of ${D.lanes[D.ops[a].lane].name}, ` +
        `${fmtAt(D.ops[a].start)} → ${fmtAt(endOf(D.ops[b]))}\nzoom in to see each`;
    }
    if (target.dataset.span !== undefined) return target.dataset.span;
    if (target.dataset.lane !== undefined) {
      const l = D.lanes[Number(target.dataset.lane)];
      return `${l.name}\n${l.note}`;
    }
    return null;
  }
  svg.addEventListener("mousemove", (ev) => {
    if (drag) return;
    const text = describe(ev.target);
    if (!text) { tip.hidden = true; return; }
    tip.textContent = text;
    tip.hidden = false;
    const x = Math.min(ev.clientX + 14, window.innerWidth - tip.offsetWidth - 8);
    const yy = ev.clientY + 16 + tip.offsetHeight > window.innerHeight ? ev.clientY - tip.offsetHeight - 10 : ev.clientY + 16;
    tip.style.left = x + "px";
    tip.style.top = yy + "px";
  });
  svg.addEventListener("mouseleave", () => { tip.hidden = true; });

  function pin(target) {
    if (target.dataset.op === undefined) return;
    pinned = Number(target.dataset.op);
    const o = D.ops[pinned];
    const inFindings = D.findings.map((f, i) => [f, i]).filter(([f]) => f.marks.some((m) => m.op === pinned));
    $("pinned-box").hidden = false;
    $("pinned").innerHTML = esc(describe(target)).replace(/\n/g, "<br>") +
      (inFindings.length ? "<br>in: " + inFindings.map(([f]) => esc(f.name)).join(", ") : "") +
      `<br><span style="color:var(--muted)">history line ${o.line}</span>`;
    schedule();
  }

  // Zoom and pan.
  let drag = null;
  svg.addEventListener("wheel", (ev) => {
    ev.preventDefault();
    if (ev.shiftKey) {
      const dt = (ev.deltaY + ev.deltaX) / scale();
      setView(t0 + dt, t1 + dt);
      return;
    }
    const rect = svg.getBoundingClientRect();
    const tc = t0 + (ev.clientX - rect.left - GUTTER) / scale();
    const f = Math.exp(ev.deltaY * 0.0015);
    setView(tc - (tc - t0) * f, tc + (t1 - tc) * f);
  }, { passive: false });
  svg.addEventListener("mousedown", (ev) => {
    if (ev.button !== 0) return;
    drag = { x: ev.clientX, a: t0, b: t1, moved: false, target: ev.target };
    svg.classList.add("dragging");
  });
  window.addEventListener("mousemove", (ev) => {
    if (!drag) return;
    const dx = ev.clientX - drag.x;
    if (Math.abs(dx) > 3) drag.moved = true;
    if (drag.moved) {
      const dt = dx / ((width() - GUTTER - RIGHT) / (drag.b - drag.a));
      setView(drag.a - dt, drag.b - dt);
    }
  });
  window.addEventListener("mouseup", () => {
    if (!drag) return;
    if (!drag.moved) pin(drag.target);
    drag = null;
    svg.classList.remove("dragging");
  });
  svg.addEventListener("dblclick", (ev) => {
    const rect = svg.getBoundingClientRect();
    const tc = t0 + (ev.clientX - rect.left - GUTTER) / scale();
    const half = (t1 - t0) / 4;
    setView(tc - half, tc + half);
  });
  function miniJump(ev) {
    const rect = mini.getBoundingClientRect();
    const tc = lo + ((ev.clientX - rect.left) / rect.width) * (hi - lo);
    const half = (t1 - t0) / 2;
    setView(tc - half, tc + half);
  }
  let miniDrag = false;
  mini.addEventListener("mousedown", (ev) => { miniDrag = true; miniJump(ev); });
  window.addEventListener("mousemove", (ev) => { if (miniDrag) miniJump(ev); });
  window.addEventListener("mouseup", () => { miniDrag = false; });
  const zoomBy = (f) => { const c = (t0 + t1) / 2; setView(c - (c - t0) * f, c + (t1 - c) * f); };
  $("fit").addEventListener("click", fit);
  $("focus").addEventListener("click", focus);
  $("zoom-in").addEventListener("click", () => zoomBy(0.5));
  $("zoom-out").addEventListener("click", () => zoomBy(2));
  $("dim").addEventListener("change", schedule);
  window.addEventListener("keydown", (ev) => {
    const span = t1 - t0;
    const keys = {
      "+": () => zoomBy(0.5), "=": () => zoomBy(0.5), "-": () => zoomBy(2), "0": fit, f: focus,
      ArrowLeft: () => setView(t0 - span * 0.2, t1 - span * 0.2),
      ArrowRight: () => setView(t0 + span * 0.2, t1 + span * 0.2),
    };
    if (keys[ev.key]) { keys[ev.key](); ev.preventDefault(); }
  });
  window.addEventListener("resize", () => { miniBase = null; schedule(); });

  fillSide();
  select(sel);
  if (sel >= 0) {
    const [a, b] = focusRange(sel);
    t0 = a; t1 = b;
  } else {
    t0 = lo - (hi - lo) * 0.01; t1 = hi + (hi - lo) * 0.01;
  }
  render();
})();
