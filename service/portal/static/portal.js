// Cranfield portal: small conveniences on top of pages that work without JavaScript.
(function () {
  "use strict";

  // Selectors marked data-autosubmit submit their form on change (the button stays for no-JS).
  document.querySelectorAll("[data-autosubmit]").forEach(function (el) {
    el.addEventListener("change", function () { el.form.submit(); });
  });

  // Sortable tables (table[data-sortable]): each sortable heading links to the page sorted on the
  // server (?sort=...); here the rows are reordered in place instead, numbers best first and text
  // A to Z, empty cells last, ties in run order, the rank column following the sorted metric.
  document.querySelectorAll("table[data-sortable]").forEach(function (table) {
    var body = table.tBodies[0], heads = table.querySelectorAll("th[data-sort-key]");
    var rankOf = function (row, col) {
      var cell = col === null ? null : row.cells[col];
      var rank = cell ? cell.getAttribute("data-rank") : row.getAttribute("data-official-rank");
      return rank ? rank : "–";
    };
    heads.forEach(function (th) {
      var link = th.querySelector("a");
      if (!link) { return; }
      link.addEventListener("click", function (ev) {
        ev.preventDefault();
        var col = th.cellIndex, numeric = th.getAttribute("data-sort-kind") === "number";
        var rows = Array.prototype.slice.call(body.rows);
        var key = function (row) {
          var v = row.cells[col].getAttribute("data-value");
          return v === "" || v === null ? null : numeric ? Number(v) : v;
        };
        rows.sort(function (a, b) {
          var x = key(a), y = key(b), byRun = a.getAttribute("data-run") < b.getAttribute("data-run") ? -1 : 1;
          if (x === y) { return byRun; }
          if (x === null) { return 1; }
          if (y === null) { return -1; }
          if (numeric) { return y - x; }
          return x < y ? -1 : 1;
        });
        rows.forEach(function (row) {
          body.appendChild(row);
          var rank = row.querySelector(".rank");
          if (rank) { rank.textContent = rankOf(row, numeric ? col : null); }
        });
        heads.forEach(function (other) { other.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", numeric ? "descending" : "ascending");
        var select = document.getElementById("sort");
        if (select) { select.value = th.getAttribute("data-sort-key"); }
        var caption = table.caption && table.caption.querySelector("[data-sorted-by]");
        if (caption) { caption.textContent = th.getAttribute("data-sort-key"); }
        if (window.history && window.history.replaceState) { window.history.replaceState(null, "", link.href); }
      });
    });
  });

  // Run files: check the first lines before uploading (the server validates everything again).
  var runInput = document.querySelector("input[data-run-check]");
  if (runInput) {
    var out = document.getElementById("client-hint");
    var topics = new Set(JSON.parse(runInput.getAttribute("data-topics") || "[]"));
    runInput.addEventListener("change", function () {
      out.textContent = ""; out.hidden = true;
      var file = runInput.files[0];
      if (!file) { return; }
      file.slice(0, 262144).text().then(function (text) {
        var lines = text.split("\n"), problem = null, n = Math.min(lines.length, 2000);
        if (file.size === 0) { problem = "the file is empty"; }
        for (var i = 0; i < n && !problem; i++) {
          var line = lines[i].replace(/\r$/, "");
          if (i === n - 1 && n === lines.length && line === "") { break; }
          if (line.trim() === "") { problem = "line " + (i + 1) + ": empty line"; break; }
          var cols = line.trim().split(/\s+/);
          if (cols.length !== 6) { problem = "line " + (i + 1) + ": expected 6 columns (topic Q0 docno rank score tag), found " + cols.length; break; }
          if (topics.size && !topics.has(cols[0])) { problem = "line " + (i + 1) + ": unknown topic " + cols[0]; break; }
          if (isNaN(Number(cols[4]))) { problem = "line " + (i + 1) + ": the score " + cols[4] + " is not a number"; break; }
        }
        if (problem) { out.textContent = "Before you upload: " + problem + "."; out.hidden = false; }
      });
    });
  }

  // Live progress: pages with data-progress-url poll it while work is pending.
  var live = document.querySelector("[data-progress-url]");
  if (live) {
    var url = live.getAttribute("data-progress-url");
    var tick = function () {
      fetch(url, { credentials: "same-origin" }).then(function (r) { return r.json(); }).then(function (doc) {
        var pending = false;
        (doc.runs || []).forEach(function (run) {
          var cell = document.querySelector('[data-run-status="' + run.id + '"]');
          if (cell) { cell.textContent = run.status; cell.className = "badge " + run.status; }
          var rank = document.querySelector('[data-run-rank="' + run.id + '"]');
          if (rank) { rank.textContent = run.rank == null ? "–" : run.rank; }
          var mean = document.querySelector('[data-run-mean="' + run.id + '"]');
          if (mean) { mean.textContent = run.mean == null ? "–" : run.mean.toFixed(4); }
          if (run.status !== "evaluated" && run.status !== "failed" && run.status !== "rejected") { pending = true; }
        });
        var bar = document.querySelector("progress[data-job]");
        if (bar && doc.job) {
          bar.max = Math.max(doc.job.total, 1); bar.value = doc.job.done + doc.job.failed;
          var label = document.getElementById("job-status");
          if (label && doc.job.summary) { label.textContent = doc.job.summary; }
          if (doc.job.status !== "done" && doc.job.status !== "failed") { pending = true; }
        }
        var finished = false;
        (doc.pool_builds || []).forEach(function (build) {
          var badge = document.querySelector('[data-build-status="' + build.id + '"]');
          if (!badge) { return; }
          var busy = build.status !== "done" && build.status !== "failed";
          if (!busy && badge.textContent !== build.status) { finished = true; }
          badge.textContent = build.status; badge.className = "badge " + build.status;
          if (busy) { pending = true; }
        });
        if (finished) { window.location.reload(); return; }  // the new pool is listed on the page
        if (pending) { setTimeout(tick, 1000); }
      }).catch(function () { setTimeout(tick, 3000); });
    };
    tick();
  }

  // A new token, shown once: a copy button (without JavaScript the token is selectable text).
  document.querySelectorAll("button[data-copy]").forEach(function (button) {
    var field = document.getElementById(button.getAttribute("data-copy"));
    var said = document.querySelector('[data-copied="' + button.getAttribute("data-copy") + '"]');
    if (!field) { return; }
    button.hidden = false;
    button.addEventListener("click", function () {
      field.select();
      var done = function () { if (said) { said.textContent = "Copied."; } };
      var fallback = function () { document.execCommand("copy"); done(); };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(field.value).then(done, fallback);
      } else {
        fallback();
      }
    });
  });
})();
