// caplab report: draws the page's charts with uPlot from the JSON caplab embedded in #data.
// Every number is computed by caplab; this script only draws. When it is done it writes what it
// drew (points per chart) and any error into #selfcheck, which the tests read.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("data").textContent);
  var COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"];
  var sync = uPlot.sync("time");

  function width(el) { return Math.max(320, Math.min(el.clientWidth || 1100, 1160)); }
  function positive(a) { return a.map(function (v) { return v == null || v <= 0 ? null : v; }); }
  function fmt(v, d) { return v == null ? "–" : v.toLocaleString("en-US", { maximumFractionDigits: d }); }
  function msValue(u, v) { return v == null ? "–" : fmt(v, 3) + " ms"; }
  function record(id, points) { caplabCheck.charts[id] = points; }
  function line(label, color, extra) {
    var s = { label: label, stroke: color, width: 1.5, spanGaps: false, points: { show: false } };
    for (var k in extra) s[k] = extra[k];
    return s;
  }
  function dots(label, color, size) {
    return { label: label, stroke: color, fill: color, paths: function () { return null; }, points: { show: true, size: size || 7, fill: color } };
  }
  // Ticks at powers of ten (log axes).
  function decades(u, axis, min, max) {
    var out = [];
    for (var p = Math.floor(Math.log10(Math.max(min, 1e-9))); Math.pow(10, p) <= max * 1.0001; p++) {
      if (Math.pow(10, p) >= min * 0.9999) out.push(Math.pow(10, p));
    }
    return out;
  }
  function percentLabel(x) {
    if (x <= 1) return "0%";
    var p = 100 * (1 - 1 / x);
    var digits = Math.max(0, Math.round(Math.log10(x)) - 2);
    return p.toFixed(digits) + "%";
  }
  function chart(id, opts, table, points) {
    var el = document.getElementById(id);
    if (!el) return null;
    opts.width = width(el);
    opts.height = opts.height || 260;
    var u = new uPlot(opts, table, el);
    el.dataset.points = points;
    record(id, points);
    caplabCheck.logY[id] = !!(opts.scales && opts.scales.y && opts.scales.y.distr === 3);
    return u;
  }
  function timeOpts(title, yLabel, series, log, extra) {
    var o = {
      title: title,
      cursor: { sync: { key: sync.key } },
      scales: { x: { time: true }, y: log ? { distr: 3 } : {} },
      axes: [{}, { label: yLabel, size: 60 }],
      series: [{}].concat(series),
    };
    for (var k in extra) o[k] = extra[k];
    return o;
  }

  // The steady-state verdict's segments of `metric`: shaded bands (alternating) when `bands`,
  // and each segment's mean drawn across it. Returns a uPlot draw hook.
  function segmentHook(steady, metric, color, bands) {
    var found = (steady || []).filter(function (v) { return v.metric === metric; })[0];
    if (!found) return null;
    caplabCheck.segments[metric] = found.segments.length;
    return function (u) {
      var ctx = u.ctx, top = u.bbox.top, h = u.bbox.height;
      ctx.save();
      found.segments.forEach(function (g, i) {
        var x0 = u.valToPos(g[0], "x", true), x1 = u.valToPos(g[1], "x", true);
        if (bands && i % 2 === 1) {
          ctx.fillStyle = "rgba(120, 130, 145, 0.12)";
          ctx.fillRect(x0, top, x1 - x0, h);
        }
        var y = u.valToPos(g[2], "y", true);
        if (isFinite(y)) {
          ctx.strokeStyle = color; ctx.lineWidth = 2; ctx.setLineDash([8, 3]);
          ctx.beginPath(); ctx.moveTo(x0, y); ctx.lineTo(x1, y); ctx.stroke();
        }
      });
      ctx.restore();
    };
  }
  // Each fault's span, shaded red and labelled, on a time chart.
  function faultHook(faults) {
    if (!faults || !faults.length) return null;
    caplabCheck.faults = faults.length;
    return function (u) {
      var ctx = u.ctx, top = u.bbox.top, h = u.bbox.height;
      ctx.save();
      faults.forEach(function (f) {
        var x0 = u.valToPos(f[0], "x", true), x1 = u.valToPos(f[1], "x", true);
        ctx.fillStyle = "rgba(214, 39, 40, 0.10)";
        ctx.fillRect(x0, top, Math.max(x1 - x0, 2), h);
        ctx.fillStyle = "#a01c1c"; ctx.font = "11px sans-serif";
        ctx.fillText(f[2], x0 + 3, top + 12);
      });
      ctx.restore();
    };
  }
  function hooks(list) {
    list = list.filter(function (h) { return h; });
    return list.length ? { draw: list } : {};
  }
  function verdictTitle(steady) {
    var t = (steady || []).filter(function (v) { return v.metric === "throughput"; })[0];
    return t ? " (" + t.class + ", " + (t.segments.length - 1) + " changepoint" + (t.segments.length === 2 ? ")" : "s)") : "";
  }

  // ---- run pages (one run, or several overlaid) ----
  function runCharts(runs) {
    var overlay = runs.length > 1;
    if (!overlay) {
      var s = runs[0];
      var n = s.t.length;
      var gcT = s.gc.map(function (p) { return p[0]; }), gcMs = s.gc.map(function (p) { return p[1]; });
      var slowT = s.slow.map(function (p) { return p[0]; }), slowMs = s.slow.map(function (p) { return p[1]; });
      caplabCheck.slow = s.slow.length;
      var lat = uPlot.join([
        [s.t, positive(s.p50), positive(s.p99), positive(s.p999), positive(s.max), positive(s.service_p99)],
        [gcT, positive(gcMs)],
        [slowT, positive(slowMs)],
      ]);
      var latency = chart("chart-latency", timeOpts("Response time per " + s.bucket_s + " s (log scale)", "ms", [
        line("p50", COLORS[0], { value: msValue }), line("p99", COLORS[4], { value: msValue }),
        line("p99.9", COLORS[1], { value: msValue }), line("max", "#444", { value: msValue, width: 1 }),
        line("service p99", COLORS[2], { value: msValue, dash: [5, 4] }), dots("GC pause", "#d62728", 8),
        dots("slow operation (its cause below)", "#9467bd", 6),
      ], true, { hooks: hooks([segmentHook(s.steady, "p50", COLORS[0], false), segmentHook(s.steady, "p99", COLORS[4], false), faultHook(s.faults)]) }), lat, n);
      // The GC pauses as drawn: (time, ms) of every point of the pause series.
      if (latency) caplabCheck.gc = latency.data[0].map(function (x, i) { return [x, latency.data[6][i]]; })
        .filter(function (p) { return p[1] != null; });
      var tput = [s.t, s.ok_rate, s.error_rate];
      var tputSeries = [line("achieved op/s", COLORS[0], { value: function (u, v) { return fmt(v, 1); } }),
        line("errors/s", COLORS[1], { value: function (u, v) { return fmt(v, 1); } })];
      if (s.target != null) {
        tput.push(s.t.map(function () { return s.target; }));
        tputSeries.push(line("target op/s", "#888", { dash: [6, 4], width: 1 }));
      } else if (s.target_at.length) {
        tput.push(s.target_at);
        tputSeries.push(line("target op/s (the shape)", "#888", { dash: [6, 4], width: 1 }));
      }
      chart("chart-throughput", timeOpts("Throughput: target and achieved" + verdictTitle(s.steady), "op/s", tputSeries, false,
        { hooks: hooks([segmentHook(s.steady, "throughput", "#17612c", true), faultHook(s.faults)]) }), tput, n);
      if (s.cpu_t.length) {
        var flT = s.flushes.map(function (f) { return f[0]; }), flMb = s.flushes.map(function (f) { return f[1]; });
        var cpu = uPlot.join([[s.cpu_t, s.server_cpu, s.client_cpu, s.flush_cpu], [flT, flMb]]);
        var o = timeOpts("CPU (cores) and memtable flushes", "cores", [
          line("server", COLORS[3]), line("client", COLORS[2]), line("flush threads", COLORS[5]),
          Object.assign(dots("flush (MB written)", "#8c564b", 7), { scale: "mb" }),
        ], false, { hooks: hooks([faultHook(s.faults)]) });
        o.scales.mb = {};
        o.axes.push({ scale: "mb", side: 1, label: "MB flushed", grid: { show: false }, size: 60 });
        chart("chart-cpu", o, cpu, s.cpu_t.length);
        // The first and last second each time series covers, as drawn.
        caplabCheck.spans = { intervals: [s.t[0], s.t[n - 1]], cpu: [s.cpu_t[0], s.cpu_t[s.cpu_t.length - 1]] };
      } else {
        var el = document.getElementById("chart-cpu");
        if (el) el.textContent = "No server CPU series: the target is not a node caplab runs here.";
      }
      if (s.pool_t.length) {
        var po = timeOpts("Thread pools, all nodes (system_views over CQL)", "tasks", [
          line("pending", COLORS[4]), line("active", COLORS[0]), line("blocked", COLORS[1]),
          Object.assign(line("completed/s", COLORS[2], { dash: [5, 4], width: 1 }), { scale: "rate" }),
          Object.assign(line("dropped/s", "#8c564b", { width: 1 }), { scale: "rate" }),
        ], false, { hooks: hooks([faultHook(s.faults)]) });
        po.scales.rate = {};
        po.axes.push({ scale: "rate", side: 1, label: "per second", grid: { show: false }, size: 70 });
        chart("chart-pools", po, [s.pool_t, s.pending, s.active, s.blocked, s.completed, s.dropped], s.pool_t.length);
      } else {
        var pe = document.getElementById("chart-pools");
        if (pe) pe.textContent = "No thread-pool series (--server-facts none, or the cluster has no system_views).";
      }
      var c = s.compaction;
      if (c.t.length) {
        var co = timeOpts("Compaction, all nodes (over JMX)", "pending", [
          line("pending compactions", COLORS[4]),
          Object.assign(line("MiB/s compacted", COLORS[2], { width: 1 }), { scale: "mb" }),
          Object.assign(line("SSTables per read", COLORS[0], { dash: [5, 4] }), { scale: "per" }),
        ], false, { hooks: hooks([faultHook(s.faults)]) });
        co.scales.mb = {};
        co.scales.per = {};
        co.axes.push({ scale: "mb", side: 1, label: "MiB/s", grid: { show: false }, size: 60 });
        co.axes.push({ scale: "per", side: 1, label: "SSTables per read", grid: { show: false }, size: 60 });
        chart("chart-compaction", co, [c.t, c.pending, c.mb_per_s, c.per_read], c.t.length);
      } else {
        var ce = document.getElementById("chart-compaction");
        if (ce) ce.remove();
      }
      distributionChart("chart-distribution", s.distribution);
      curveChart("chart-curve", runs);
      return;
    }
    // Overlay: time since each run's start, p99 and throughput per run.
    var tables = [], p99 = [], rate = [];
    runs.forEach(function (s, i) {
      var t0 = s.t.length ? s.t[0] : 0;
      tables.push(s.t.map(function (t) { return t - t0; }));
      p99.push(line(s.label + " p99", COLORS[i % COLORS.length], { value: msValue }));
      rate.push(line(s.label + " op/s", COLORS[i % COLORS.length]));
    });
    var most = Math.max.apply(null, runs.map(function (s) { return s.t.length; }));
    var relative = function (title, y, series, key, log) {
      var o = timeOpts(title, y, series, log);
      o.scales.x = { time: false };
      o.axes[0] = { label: "seconds since the measured window began" };
      return o;
    };
    chart("chart-latency", relative("Response time p99 (log scale)", "ms", p99, "p99", true),
      uPlot.join(runs.map(function (s, i) { return [tables[i], positive(s.p99)]; })), most);
    chart("chart-throughput", relative("Achieved throughput", "op/s", rate, "ok_rate", false),
      uPlot.join(runs.map(function (s, i) { return [tables[i], s.ok_rate]; })), most);
    ["chart-cpu", "chart-compaction"].forEach(function (id) {
      var el = document.getElementById(id);
      if (el) el.remove();
    });
    var curves = [];
    runs.forEach(function (s) { if (s.distribution.length) curves.push({ name: s.label, x: s.distribution[0].x, ms: s.distribution[0].ms }); });
    distributionChart("chart-distribution", curves);
    curveChart("chart-curve", runs);
  }

  // Latency against throughput along a shape: each part of it a point at its achieved rate;
  // p50, p99 and p99.9 for one run, p99 for each of several runs; one run's knee marked.
  function curveChart(id, runs, points) {
    var withCurve = runs.filter(function (s) { return s.curve.length > 1; });
    if (!withCurve.length) {
      var section = document.getElementById("section-curve");
      if (section) section.remove();
      return;
    }
    var col = function (c, k) { return c.map(function (p) { return p[k]; }); };
    var table, series, dotted = { show: true, size: 6 };
    if (withCurve.length === 1) {
      var c = withCurve[0].curve;
      table = [col(c, 0), positive(col(c, 1)), positive(col(c, 2)), positive(col(c, 3))];
      series = [line("p50", COLORS[0], { value: msValue, points: dotted }), line("p99", COLORS[4], { value: msValue, points: dotted }),
        line("p99.9", COLORS[1], { value: msValue, points: dotted })];
    } else {
      table = uPlot.join(withCurve.map(function (s) { return [col(s.curve, 0), positive(col(s.curve, 2))]; }));
      series = withCurve.map(function (s, i) {
        return line(s.label + " p99", COLORS[i % COLORS.length], { value: msValue, spanGaps: true, points: dotted });
      });
    }
    var knee = withCurve.length === 1 ? withCurve[0].knee : null;
    caplabCheck.knee = knee;
    var mark = function (u) {
      if (!knee || knee[0] == null) return;
      var x = u.valToPos(knee[0], "x", true), ctx = u.ctx;
      ctx.save(); ctx.strokeStyle = "#17612c"; ctx.setLineDash([4, 3]);
      ctx.beginPath(); ctx.moveTo(x, u.bbox.top); ctx.lineTo(x, u.bbox.top + u.bbox.height); ctx.stroke();
      ctx.fillStyle = "#17612c"; ctx.font = "12px sans-serif";
      var words = knee[1] == null ? "no knee up to " + fmt(knee[0], 0) : "knee: " + fmt(knee[0], 0) + " to " + fmt(knee[1], 0) + " op/s asked";
      ctx.fillText(words, x + 4, u.bbox.top + 14);
      ctx.restore();
    };
    chart(id, {
      title: "Latency against throughput (" + (points || "each part of the shape") + "; log scale)",
      scales: { x: { time: false }, y: { distr: 3 } },
      axes: [{ label: "achieved op/s", values: function (u, s) { return s.map(function (v) { return fmt(v, 0); }); } }, { label: "ms", size: 60 }],
      series: [{ label: "achieved op/s", value: function (u, v) { return fmt(v, 0); } }].concat(series),
      hooks: { draw: [mark] },
    }, table, table[0].length);
  }

  // HdrHistogram's percentile plot: x = 1/(1-p), log; y = ms, log.
  function distributionChart(id, curves) {
    curves = curves.filter(function (c) { return c.x.length > 0; });
    if (!curves.length) return;
    var table = uPlot.join(curves.map(function (c) { return [c.x, positive(c.ms)]; }));
    var series = curves.map(function (c, i) { return line(c.name, COLORS[i % COLORS.length], { value: msValue, spanGaps: true }); });
    chart(id, {
      title: "Latency by percentile",
      scales: { x: { time: false, distr: 3 }, y: { distr: 3 } },
      axes: [
        { label: "percentile", splits: decades, values: function (u, splits) { return splits.map(percentLabel); } },
        { label: "ms", size: 60 },
      ],
      series: [{ label: "percentile", value: function (u, v) { return v == null ? "–" : percentLabel(v); } }].concat(series),
    }, table, Math.max.apply(null, curves.map(function (c) { return c.x.length; })));
  }

  // ---- capacity pages ----
  function capacityCharts(c) {
    var pts = c.points;
    if (!pts.length) return;
    var x = pts.map(function (p) { return p.x; });
    // Log scale: step p99s of a few ms sit decades under a bound of hundreds.
    var pass = positive(pts.map(function (p) { return p.pass ? p.ms : null; }));
    var fail = positive(pts.map(function (p) { return p.pass ? null : p.ms; }));
    var bound = pts.map(function () { return c.bound; });
    var marker = function (u) {
      if (c.capacity == null) return;
      var px = u.valToPos(c.capacity, "x", true), ctx = u.ctx;
      ctx.save(); ctx.strokeStyle = "#17612c"; ctx.lineWidth = 2; ctx.setLineDash([6, 4]);
      ctx.beginPath(); ctx.moveTo(px, u.bbox.top); ctx.lineTo(px, u.bbox.top + u.bbox.height); ctx.stroke();
      ctx.fillStyle = "#17612c"; ctx.font = "12px sans-serif"; ctx.fillText("capacity " + fmt(c.capacity, 0), px + 4, u.bbox.top + 14);
      ctx.restore();
    };
    var rateAxis = { label: "target rate (op/s)", values: function (u, s) { return s.map(function (v) { return fmt(v, 0); }); } };
    chart("chart-capacity", {
      title: c.objective + " of each step's worst window, per target rate (each repeat a point; log scale)",
      scales: { x: { time: false }, y: { distr: 3 } },
      axes: [rateAxis, { label: "ms", size: 60 }],
      series: [{ label: "rate", value: function (u, v) { return fmt(v, 0); } }, dots("pass", "#2ca02c", 9), dots("fail", "#d62728", 9),
        line("bound " + fmt(c.bound, 1) + " ms", "#555", { dash: [6, 4], width: 1, spanGaps: true })],
      hooks: { draw: [marker] },
    }, [x, pass, fail, bound], pts.length);
    chart("chart-achieved", {
      title: "Achieved against target rate",
      scales: { x: { time: false }, y: {} },
      axes: [rateAxis, { label: "achieved op/s", size: 70 }],
      series: [{ label: "target", value: function (u, v) { return fmt(v, 0); } }, dots("achieved", "#1f77b4", 8),
        line("achieved = target", "#999", { dash: [4, 4], width: 1, spanGaps: true })],
    }, [x, pts.map(function (p) { return p.achieved; }), pts.map(function (p) { return p.rate; })], pts.length);
    if (document.getElementById("chart-curve")) {
      curveChart("chart-curve", [{ label: "steps", curve: c.curve, knee: c.knee }], "each step");
    }
  }

  // ---- experiment pages ----
  function experimentCharts(e) {
    e.measurements.forEach(function (m, i) {
      if (m.distribution.length) distributionChart("chart-distribution-" + i, m.distribution);
      m.steps.forEach(function (s) {
        if (!s.series) return;
        var r = s.series;
        var gcT = r.gc.map(function (p) { return p[0]; }), gcMs = r.gc.map(function (p) { return p[1]; });
        chart("chart-step-" + s.index, timeOpts(null, "ms", [
          line("p50", COLORS[0], { value: msValue }), line("p99", COLORS[4], { value: msValue }),
          line("p99.9", COLORS[1], { value: msValue }), dots("GC pause", "#d62728", 6),
        ], true, { height: 170, cursor: { sync: { key: "step" + s.index } } }),
        uPlot.join([[r.t, positive(r.p50), positive(r.p99), positive(r.p999)], [gcT, positive(gcMs)]]), r.t.length);
      });
    });
  }

  // ---- the history page ----
  function historyCharts(charts) {
    caplabCheck.changes = {};
    caplabCheck.intervals = {};
    charts.forEach(function (c) {
      var levels = function (u) {
        var ctx = u.ctx;
        ctx.save();
        // Bars and shading stay inside the plot: a wide interval is cut at its edge.
        ctx.beginPath(); ctx.rect(u.bbox.left, u.bbox.top, u.bbox.width, u.bbox.height); ctx.clip();
        c.segments.forEach(function (g) {
          var x0 = u.valToPos(g[0], "x", true), x1 = u.valToPos(g[1], "x", true);
          var lo = u.valToPos(g[3], "y", true), hi = u.valToPos(g[4], "y", true);
          if (isFinite(lo) && isFinite(hi)) {
            ctx.fillStyle = "rgba(31, 119, 180, 0.12)";
            ctx.fillRect(x0, hi, Math.max(x1 - x0, 2), lo - hi);
          }
          var y = u.valToPos(g[2], "y", true);
          ctx.strokeStyle = "#1f77b4"; ctx.lineWidth = 2; ctx.setLineDash([8, 3]);
          ctx.beginPath(); ctx.moveTo(x0, y); ctx.lineTo(x1, y); ctx.stroke();
        });
        ctx.strokeStyle = "rgba(31, 119, 180, 0.55)"; ctx.lineWidth = 1.5; ctx.setLineDash([]);
        var bars = 0;
        c.t.forEach(function (t, i) {
          if (c.lo[i] == null || c.hi[i] == null) return;
          var x = u.valToPos(t, "x", true), y0 = u.valToPos(c.lo[i], "y", true), y1 = u.valToPos(c.hi[i], "y", true);
          if (!isFinite(x) || !isFinite(y0) || !isFinite(y1)) return;
          ctx.beginPath(); ctx.moveTo(x, y0); ctx.lineTo(x, y1);
          ctx.moveTo(x - 3, y0); ctx.lineTo(x + 3, y0); ctx.moveTo(x - 3, y1); ctx.lineTo(x + 3, y1); ctx.stroke();
          bars += 1;
        });
        caplabCheck.intervals[c.id] = bars;
        c.changes.forEach(function (k) {
          var x = u.valToPos(k[0], "x", true);
          ctx.strokeStyle = k[1] ? "#d62728" : "#2ca02c"; ctx.lineWidth = 2; ctx.setLineDash([]);
          ctx.beginPath(); ctx.moveTo(x, u.bbox.top); ctx.lineTo(x, u.bbox.top + u.bbox.height); ctx.stroke();
          ctx.fillStyle = ctx.strokeStyle; ctx.font = "11px sans-serif";
          ctx.fillText(k[1] ? "regression" : "improvement", x + 3, u.bbox.top + 12);
        });
        ctx.restore();
      };
      var hollow = { label: "left out (not steady or not completed)", stroke: "#7f7f7f", paths: function () { return null; },
        points: { show: true, size: 7, fill: "#fff", stroke: "#7f7f7f" } };
      var u = chart(c.id, {
        title: c.title,
        scales: { x: { time: true }, y: {} },
        axes: [{}, { size: 70 }],
        series: [{ label: "run", value: function (u, v, si, i) { return i == null ? "–" : c.about[i]; } },
          dots("steady", "#1f77b4", 7), hollow],
        hooks: { draw: [levels] },
      }, [c.t, c.v, c.out], c.t.length);
      caplabCheck.changes[c.id] = c.changes.length;
      if (u) {
        u.over.style.cursor = "pointer";
        u.over.addEventListener("click", function () {
          var i = u.cursor.idx;
          if (i != null && c.link[i]) window.location.href = c.link[i];
        });
      }
    });
  }

  try {
    if (data.kind === "history") historyCharts(data.charts);
    else if (data.kind === "run") runCharts(data.runs);
    else if (data.kind === "capacity") capacityCharts(data);
    else if (data.kind === "experiment") experimentCharts(data);
  } catch (e) {
    caplabCheck.errors.push(String(e && e.stack || e));
  }
  // Written after load, so a request the policy blocked (reported asynchronously) is in it.
  function done() {
    document.getElementById("selfcheck").textContent = JSON.stringify(caplabCheck);
    document.body.dataset.drawn = "1";
  }
  if (document.readyState === "complete") setTimeout(done, 50);
  else window.addEventListener("load", function () { setTimeout(done, 50); });
})();
