(function () {
  var table = document.getElementById("episodes");
  if (!table) { return; }
  var body = table.tBodies[0];
  var heads = Array.prototype.slice.call(table.querySelectorAll("th[data-sort]"));
  function value(row, key, numeric) {
    var raw = row.dataset[key];
    if (raw === undefined || raw === "") { return null; }
    return numeric ? parseFloat(raw) : raw;
  }
  function sortBy(key, dir) {
    var th = heads.filter(function (h) { return h.dataset.sort === key; })[0];
    if (!th) { return; }
    var numeric = th.dataset.type === "num";
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (r1, r2) {
      var a = value(r1, key, numeric), b = value(r2, key, numeric);
      if (a === null || b === null) { return a === b ? 0 : (a === null ? 1 : -1); }
      var c = numeric ? a - b : String(a).localeCompare(String(b), undefined, {numeric: true});
      return dir === "desc" ? -c : c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
    heads.forEach(function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", dir === "desc" ? "descending" : "ascending");
    table.dataset.sorted = key + ":" + dir;
  }
  heads.forEach(function (th) {
    th.addEventListener("click", function () {
      sortBy(th.dataset.sort, th.getAttribute("aria-sort") === "ascending" ? "desc" : "asc");
    });
  });
  var params = new URLSearchParams(window.location.search);
  if (params.get("sort")) { sortBy(params.get("sort"), params.get("dir") || "asc"); }
})();
