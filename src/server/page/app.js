// The review page of `simdb serve` (docs/review.md): it calls the service's
// JSON API like any client. Every text from the store is set as a text node,
// never parsed as HTML.

const TOKEN_KEY = "simdb-token";
const view = document.getElementById("view");

// An element with attributes and children; strings become text nodes.
function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "onclick" || k === "onsubmit" || k === "onchange") e[k] = v;
    else e.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function showError(message) {
  const p = document.getElementById("error");
  p.textContent = message || "";
  p.hidden = !message;
}

// A call of the API with the token of this tab, if one was given; a 401
// asks for the token.
async function api(path, body) {
  const headers = {};
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers["Authorization"] = "Bearer " + token;
  const init = { headers };
  if (body !== undefined) {
    init.method = "POST";
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const resp = await fetch(path, init);
  const answer = await resp.json().catch(() => ({}));
  if (resp.status === 401) {
    document.getElementById("token-form").hidden = false;
    throw new Error("the service asks for its token");
  }
  if (!resp.ok) {
    const field = answer.field ? ` (${answer.field})` : "";
    throw new Error(`${resp.status}${field}: ${answer.error || answer.message || resp.statusText}`);
  }
  return answer;
}

function fixed(x, digits = 2) {
  return x === null || x === undefined ? "" : Number(x).toFixed(digits);
}

// Unix seconds as "YYYY-MM-DD hh:mm:ss" (UTC); the number itself when it is
// no date a browser can show (one bad member must not blank its cluster).
function when(seconds) {
  const d = new Date(seconds * 1000);
  return Number.isNaN(d.getTime()) ? String(seconds) : d.toISOString().slice(0, 19).replace("T", " ");
}

function link(hash, text) {
  return el("a", { href: hash }, text);
}

function clusterLink(id) {
  return link("#/cluster?id=" + encodeURIComponent(id), id);
}

function table(heads, rows) {
  return el(
    "table",
    {},
    el("thead", {}, el("tr", {}, heads.map((h) => el("th", {}, h)))),
    el("tbody", {}, rows),
  );
}

function terms(list, cls) {
  return el("span", { class: "terms" }, list.map((t) => el("span", { class: cls }, Array.isArray(t) ? t[0] : t)));
}

// ---- search

function searchView(params) {
  const box = el("textarea", { id: "query-text", placeholder: "a text, or leave empty and give an id" });
  const id = el("input", { id: "query-id", placeholder: "a stored document's id" });
  const out = el("div", { id: "hits" });
  box.value = params.get("text") || "";
  id.value = params.get("id") || "";
  const run = async (ev) => {
    ev.preventDefault();
    showError("");
    out.replaceChildren();
    const q = id.value.trim() ? { id: id.value.trim() } : { text: box.value };
    q.explain = true;
    try {
      const a = await api("/query", q);
      // With `explain`, each hit carries its terms: shared, only the
      // document's, only the query's.
      const rows = a.hits.map((h) => {
        const x = h;
        return el(
          "tr",
          { class: "hit" },
          el("td", {}, clusterLink(h.id)),
          el("td", { class: "num" }, h.distance),
          el("td", { class: "num" }, fixed(h.similarity)),
          el("td", { class: "num" }, fixed(h.containment)),
          el("td", {}, terms(x.shared || [], "shared"), terms(x.only_document || [], "only"), terms(x.only_query || [], "only")),
        );
      });
      out.append(
        el("p", {}, `${a.hits.length} hit(s)` + (a.complete ? "" : " (the limit was reached)")),
        table(["id", "bits", "similarity", "containment", "terms: shared, only the document's, only the query's"], rows),
      );
    } catch (e) {
      showError(e.message);
    }
  };
  // A link with `id` or `text` (#/search?id=…) runs its search.
  if (id.value || box.value) run(new Event("submit"));
  return el(
    "section",
    {},
    el("h1", {}, "Search"),
    el("form", { id: "search-form", onsubmit: run }, box, el("p", {}, id, " ", el("button", { type: "submit", id: "search" }, "Search"))),
    out,
  );
}

// ---- clusters

function clustersView(params) {
  const sort = params.get("sort") || "size";
  const source = params.get("source") || "";
  const after = params.get("after") || "";
  const out = el("div", { id: "clusters" });
  const go = (p) => {
    location.hash = "#/clusters?" + new URLSearchParams(p).toString();
  };
  const sortSel = el("select", { id: "sort", onchange: () => go({ sort: sortSel.value, source: src.value }) },
    el("option", { value: "size" }, "largest first"), el("option", { value: "newest" }, "newest member first"),
    el("option", { value: "distant" }, "most distant member first"), el("option", { value: "id" }, "oldest first"));
  sortSel.value = sort;
  const src = el("input", { id: "source", placeholder: "source" });
  src.value = source;
  const filter = el("form", { onsubmit: (ev) => { ev.preventDefault(); go({ sort, source: src.value }); } },
    "Sort ", sortSel, " source ", src, " ", el("button", { type: "submit" }, "Filter"));
  (async () => {
    try {
      const q = new URLSearchParams({ sort, limit: "20", members: "3" });
      if (source) q.set("source", source);
      if (after) q.set("after", after);
      const page = await api("/clusters?" + q.toString());
      const rows = page.clusters.map((c) =>
        el("tr", { class: "cluster" },
          el("td", {}, clusterLink(c.representative)),
          el("td", { class: "num" }, c.size),
          el("td", { class: "num" }, c.max_distance),
          el("td", {}, c.source),
          el("td", {}, c.members.slice(1).map((m) => m.id).join(", "))));
      out.append(table(["representative", "size", "most bits apart", "source", "first members"], rows));
      if (page.next) out.append(el("button", { id: "next", onclick: () => go({ sort, source, after: page.next }) }, "Next page"));
    } catch (e) {
      showError(e.message);
    }
  })();
  return el("section", {}, el("h1", {}, "Clusters"), filter, out);
}

// ---- one cluster

// The representative's text beside a member's, the differing passages
// marked: removed from the representative (del) and added in the member
// (ins), from the server's diff.
// The most of each text GET /diff compares (src/diff.rs, MAX_BYTES).
const DIFF_BYTES = 1 << 20;

function sideBySide(rep, member) {
  const out = el("section", { id: "diff" }, el("h2", {}, "Representative ", rep, " beside ", member));
  (async () => {
    try {
      const d = await api("/diff?" + new URLSearchParams({ a: rep, b: member }).toString());
      const left = el("div", { class: "side", id: "diff-a" });
      const right = el("div", { class: "side", id: "diff-b" });
      for (const s of d.spans) {
        if (s.kind === "same") {
          left.append(document.createTextNode(s.text));
          right.append(document.createTextNode(s.text));
        } else if (s.kind === "removed") {
          left.append(el("del", {}, s.text));
        } else {
          right.append(el("ins", {}, s.text));
        }
      }
      out.append(el("div", { class: "sides" }, left, right));
      if (d.a_bytes > DIFF_BYTES || d.b_bytes > DIFF_BYTES) {
        out.append(el("p", { class: "note" }, `The first MiB of each text is compared (${rep}: ${d.a_bytes} bytes, ${member}: ${d.b_bytes} bytes).`));
      }
    } catch (e) {
      out.append(el("p", { class: "note" }, "No side-by-side view: ", e.message));
    }
  })();
  return out;
}

// "Not a copy": the member leaves the cluster, and the store never puts
// it with this representative again (docs/review.md, "Decisions").
function notACopyButton(rep, member) {
  return el("button", {
    class: "not-a-copy",
    title: `Decide that ${member} is not a copy of ${rep}: it leaves this cluster for good (undo with simdb decide DB undo SEQ)`,
    onclick: async (ev) => {
      ev.target.disabled = true;
      try {
        const d = await api("/decisions", { not_a_copy: [rep, member] });
        showError("");
        const p = document.getElementById("decided");
        p.textContent = `Decision ${d.seq}: ${member} is not a copy of ${rep}.`;
        p.hidden = false;
        route();
      } catch (e) {
        ev.target.disabled = false;
        showError(e.message);
      }
    },
  }, "not a copy");
}

// "Keep this one": the member represents the cluster from now on (the
// members are re-checked against it; docs/review.md, "Decisions").
function keepButton(member) {
  return el("button", {
    class: "keep",
    title: `Keep ${member}: it represents this cluster from now on, and the members are checked against it (undo with simdb decide DB undo SEQ)`,
    onclick: async (ev) => {
      ev.target.disabled = true;
      try {
        const d = await api("/decisions", { keep: member });
        showError("");
        const p = document.getElementById("decided");
        p.textContent = `Decision ${d.seq}: keep ${member}.`;
        p.hidden = false;
        // Its cluster (without the hash change that hides the note).
        history.replaceState(null, "", "#/cluster?" + new URLSearchParams({ id: member }).toString());
        route();
      } catch (e) {
        ev.target.disabled = false;
        showError(e.message);
      }
    },
  }, "keep this one");
}

function clusterView(params) {
  const id = params.get("id") || "";
  const after = params.get("after") || "";
  const compare = params.get("compare") || "";
  const out = el("div", { id: "members" });
  const here = (extra) => {
    const p = { id };
    if (after) p.after = after;
    return "#/cluster?" + new URLSearchParams({ ...p, ...extra }).toString();
  };
  (async () => {
    try {
      const q = new URLSearchParams({ id, limit: "100" });
      if (after) q.set("after", after);
      const c = await api("/cluster?" + q.toString());
      const r = c.representative;
      out.append(
        el("p", {}, `${c.size} document(s); representative `, el("strong", { id: "representative" }, r.id), ` (${r.source}, ${r.length} bytes)`,
          r.kept ? ` kept by decision ${r.kept}` : ""),
      );
      const rows = c.members.map((m) =>
        el("tr", { class: "member" },
          el("td", {}, m.id),
          el("td", {}, m.why.confirmed_by),
          el("td", { class: "num" }, m.why.distance),
          el("td", { class: "num" }, fixed(m.why.similarity)),
          el("td", { class: "num" }, fixed(m.why.containment)),
          el("td", {}, m.source),
          el("td", {}, when(m.ingested_at)),
          el("td", {}, m.id === r.id ? "" : link(here({ compare: m.id }), "compare")),
          el("td", {}, m.id === r.id ? "" : notACopyButton(r.id, m.id)),
          el("td", {}, m.id === r.id ? "" : keepButton(m.id))));
      out.append(table(["member", "why", "bits", "similarity", "containment", "source", "written", "", "", ""], rows));
      if (c.next) {
        const next = "#/cluster?" + new URLSearchParams({ id, after: c.next }).toString();
        out.append(link(next, "Next members"));
      }
      if (compare) out.prepend(sideBySide(r.id, compare));
    } catch (e) {
      showError(e.message);
    }
  })();
  return el("section", {}, el("h1", {}, "Cluster of ", id), out);
}

// ---- calibration

const SVG = "http://www.w3.org/2000/svg";

function svg(tag, attrs, text) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = String(text);
  return e;
}

// Bars of `counts` over [0, 1], and a line at `threshold`.
function similarityChart(counts, threshold) {
  const w = 640, h = 220, pad = 30;
  const most = Math.max(1, ...counts);
  const chart = svg("svg", { width: w, height: h, id: "similarity-chart", role: "img" });
  const bw = (w - 2 * pad) / counts.length;
  counts.forEach((n, i) => {
    const bh = ((h - 2 * pad) * n) / most;
    chart.append(svg("rect", { x: pad + i * bw + 1, y: h - pad - bh, width: bw - 2, height: bh, fill: "#6a8" }));
    if (n) chart.append(svg("text", { x: pad + i * bw + 2, y: h - pad - bh - 3 }, n));
  });
  const x = pad + threshold * (w - 2 * pad);
  chart.append(svg("line", { x1: x, x2: x, y1: pad / 2, y2: h - pad, stroke: "#c00", "stroke-width": 2 }));
  chart.append(svg("text", { x: x + 4, y: pad / 2 + 10 }, `threshold ${threshold}`));
  for (const t of [0, 0.25, 0.5, 0.75, 1]) {
    chart.append(svg("text", { x: pad + t * (w - 2 * pad) - 8, y: h - pad + 14 }, t));
  }
  return chart;
}

function calibrationView() {
  const out = el("div", { id: "calibration" });
  (async () => {
    try {
      const c = await api("/calibration");
      const none = c.nearest[c.nearest.length - 1];
      out.append(
        el("p", {}, `${c.sampled} sampled documents; ${none} with no other document within ${c.max_k} bits.`),
        el("h2", {}, "Similarity of each sampled document's nearest neighbour"),
        similarityChart(c.nearest_similarity, c.threshold),
        table(["bits", "nearest", "confirmed", "rejected"],
          c.nearest.slice(0, -1).map((n, d) =>
            el("tr", {}, el("td", { class: "num" }, d), el("td", { class: "num" }, n),
              el("td", { class: "num" }, c.nearest_confirmed[d]), el("td", { class: "num" }, c.nearest_rejected[d])))),
      );
    } catch (e) {
      showError(e.message);
    }
  })();
  return el("section", {}, el("h1", {}, "Calibration"), out);
}

// ---- routing

function route() {
  showError("");
  const [path, query] = (location.hash.slice(1) || "/clusters").split("?");
  const params = new URLSearchParams(query || "");
  const views = { "/search": searchView, "/clusters": clustersView, "/cluster": clusterView, "/calibration": calibrationView };
  const make = views[path] || clustersView;
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", a.getAttribute("href") === "#" + path);
  view.replaceChildren(make(params));
}

document.getElementById("token-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  sessionStorage.setItem(TOKEN_KEY, document.getElementById("token").value);
  document.getElementById("token-form").hidden = true;
  route();
});
window.addEventListener("hashchange", () => {
  document.getElementById("decided").hidden = true;
  route();
});
route();
