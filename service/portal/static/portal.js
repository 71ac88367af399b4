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

  // Tables shown as cards on a phone (portal.css): each cell gets its column's heading as a label.
  // A cell under a heading spanning several columns, or in a row after a rowspan, is matched by the
  // column it sits in.
  document.querySelectorAll("table.cards").forEach(function (table) {
    var heads = [];
    table.querySelectorAll("thead tr:first-child th").forEach(function (th) {
      for (var k = 0; k < (th.colSpan || 1); k++) { heads.push(th.textContent.trim()); }
    });
    var spans = [];  // per column: rows still covered by a rowspan above
    table.querySelectorAll("tbody tr").forEach(function (tr) {
      var col = 0;
      Array.prototype.forEach.call(tr.children, function (cell) {
        while (spans[col] > 0) { spans[col]--; col++; }
        cell.setAttribute("data-label", heads[col] || "");
        for (var k = 0; k < (cell.colSpan || 1); k++) { spans[col + k] = (cell.rowSpan || 1) - 1; }
        col += cell.colSpan || 1;
      });
      while (col < spans.length) { if (spans[col] > 0) { spans[col]--; } col++; }
    });
    table.setAttribute("data-labelled", "");
  });

  // Run files: check the first lines before uploading (the server validates everything again).
  // The checks and their words are the server's (service/formats/tokenize.py and the run reader),
  // in its order: empty file, bytes that are not UTF-8, control characters, too few columns, a
  // score that is not a number; then topics the collection does not have.
  var firstBadUtf8 = function (bytes, complete) {
    // The offset of the first byte that is not part of valid UTF-8, or -1; a sequence cut by
    // the end of a slice of a longer file is not an error.
    var i = 0, n = bytes.length;
    while (i < n) {
      var b = bytes[i];
      if (b < 0x80) { i++; continue; }
      var need, min;
      if (b >= 0xC2 && b <= 0xDF) { need = 1; min = 0x80; }
      else if (b >= 0xE0 && b <= 0xEF) { need = 2; min = 0x800; }
      else if (b >= 0xF0 && b <= 0xF4) { need = 3; min = 0x10000; }
      else { return i; }
      var cp = b & (0x3F >> need);
      for (var k = 1; k <= need; k++) {
        if (i + k >= n) { return complete ? i : -1; }
        var c = bytes[i + k];
        if ((c & 0xC0) !== 0x80) { return i; }
        cp = (cp << 6) | (c & 0x3F);
        // overlong forms, surrogates and code points past U+10FFFF are refused at their second byte
        if (k === 1 && ((need === 2 && ((b === 0xE0 && c < 0xA0) || (b === 0xED && c > 0x9F))) ||
                        (need === 3 && ((b === 0xF0 && c < 0x90) || (b === 0xF4 && c > 0x8F))))) { return i; }
      }
      if (cp < min) { return i; }
      i += need + 1;
    }
    return -1;
  };
  var lineOf = function (bytes, offset) {
    var line = 1;
    for (var i = 0; i < offset; i++) {
      if (bytes[i] === 10 || (bytes[i] === 13 && bytes[i + 1] !== 10)) { line++; }
    }
    return line;
  };
  var runInput = document.querySelector("input[data-run-check]");
  if (runInput) {
    var out = document.getElementById("client-hint");
    var topics = new Set(JSON.parse(runInput.getAttribute("data-topics") || "[]"));
    runInput.addEventListener("change", function () {
      out.textContent = ""; out.hidden = true;
      var file = runInput.files[0];
      if (!file) { return; }
      var slice = file.slice(0, 262144);
      slice.arrayBuffer().then(function (buffer) {
        var bytes = new Uint8Array(buffer), complete = slice.size === file.size, problem = null;
        var start = (bytes[0] === 0xEF && bytes[1] === 0xBB && bytes[2] === 0xBF) ? 3 : 0;
        if (file.size === 0) { problem = "the file is empty"; }
        if (!problem) {
          var bad = firstBadUtf8(bytes, complete);
          if (bad >= 0) { problem = "line " + lineOf(bytes, bad) + ": bytes are not UTF-8 (byte offset " + bad + ")"; }
        }
        if (!problem) {
          for (var j = start; j < bytes.length; j++) {
            var v = bytes[j];
            if ((v < 32 && v !== 9 && v !== 10 && v !== 11 && v !== 12 && v !== 13) || v === 127) {
              problem = "line " + lineOf(bytes, j) + ": control character 0x" + (v < 16 ? "0" : "") + v.toString(16) + " in the line";
              break;
            }
          }
        }
        var unknown = [];
        if (!problem) {
          var text = new TextDecoder("utf-8").decode(bytes.subarray(start));
          var lines = text.split(/\r\n|\r|\n/);
          if (!complete) { lines.pop(); }  // the last line may be cut by the slice
          for (var i = 0; i < Math.min(lines.length, 2000) && !problem; i++) {
            var cols = lines[i].trim().split(/\s+/);
            if (cols[0] === "" || cols[0].charAt(0) === "#") { continue; }  // blank and comment lines are skipped
            if (cols.length < 6) { problem = "line " + (i + 1) + ": expected at least 6 whitespace-separated columns, found " + cols.length; break; }
            if (cols[4] === "" || isNaN(Number(cols[4]))) { problem = "line " + (i + 1) + ": score '" + cols[4] + "' is not a number"; break; }
            if (topics.size && !topics.has(cols[0]) && unknown.indexOf(cols[0]) < 0) { unknown.push(cols[0]); }
          }
        }
        if (!problem && unknown.length) { problem = "unknown topics: " + unknown.slice(0, 20).join(", "); }
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
