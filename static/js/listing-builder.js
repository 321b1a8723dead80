// The listing builder's small helpers. The form works without them (the server
// builds each statistic from the posted inputs and fills in suggested categories);
// with them, each statistic row shows only the inputs its kind reads (the others
// are disabled, so not posted), a group-by's categories are filled in from the
// column's suggestions as it is chosen, one more filter appears as one is used, and a
// sum's or mean's rounding grid shows, as its placeholder, the grid the server picks
// when it is left empty.
(function () {
  "use strict";
  var source = document.getElementById("listing-builder");
  if (!source) return;
  var builder = JSON.parse(source.textContent);

  function field(row, name) { return row.querySelector("[name$='-" + name + "']"); }
  function value(row, name) { var el = field(row, name); return el && !el.disabled ? el.value : ""; }
  function isDate(row, name) { return /^date/.test(builder.types[value(row, name)] || ""); }

  // The grid of a sum left without one (market.catalog.statistics.default_grid): the smallest
  // power of ten with at most a million steps in max(|lower|, |upper|), at least 1 for an
  // integer column. "" until both bounds are numbers.
  function defaultGrid(lower, upper, integer) {
    if (!lower.trim() || !upper.trim()) return "";
    var m = Math.max(Math.abs(Number(lower)), Math.abs(Number(upper)));
    if (!isFinite(m)) return "";
    if (m === 0) return "1";
    // the shortest digits that read back as m, as the server's repr: "1e+2", "2.5e-3"
    var parts = m.toExponential().split("e");
    var exponent = Number(parts[1]) - 6 + (parts[0] === "1" ? 0 : 1);
    if (integer) exponent = Math.max(exponent, 0);
    return exponent >= 0 ? "1" + "0".repeat(exponent) : "0." + "0".repeat(-exponent - 1) + "1";
  }

  function placeholder(row) {
    var grid = field(row, "grid");
    if (!grid) return;
    var shown = defaultGrid(value(row, "lower"), value(row, "upper"), builder.types[value(row, "column")] === "integer");
    grid.placeholder = shown ? "default: " + shown : "from the bounds";
  }

  function show(el, visible) {
    el.hidden = !visible;
    el.querySelectorAll("input, select, textarea").forEach(function (input) { input.disabled = !visible; });
  }

  function update(row) {
    var inputs = builder.kinds[value(row, "kind")] || [];
    var has = function (name) { return inputs.indexOf(name) >= 0; };
    var table = has("by2");
    var datedColumn = has("bin") && !has("by") && isDate(row, "column");  // a histogram of dates
    var datedBy = has("bin") && ((has("by") && isDate(row, "by")) || datedColumn);
    var grouped = value(row, "by") !== "";
    var visible = {
      kind: true,
      column: has("column"), lower: has("lower"), upper: has("upper"), grid: has("grid"),
      bins: has("bins") && !datedColumn,
      by: has("by"), by2: table, categories2: table,
      categories: has("categories") && (table || (grouped && !datedBy)),
      bin: datedBy, date_from: datedBy, date_to: datedBy,
      where: has("where")
    };
    visible.categories_public = visible.categories;
    row.querySelectorAll("[data-input]").forEach(function (el) { show(el, !!visible[el.dataset.input]); });
    placeholder(row);
    // the filters: the used ones and one more
    var more = true;
    row.querySelectorAll("[data-filter]").forEach(function (slot) {
      var used = Array.prototype.some.call(slot.querySelectorAll("select, input"), function (el) { return el.value; });
      show(slot, visible.where && (used || more));
      if (!used) more = false;
    });
  }

  function suggest(row, by, categories, previous) {
    var area = field(row, categories);
    if (!area) return;
    var text = builder.suggestions[value(row, by)] || "";
    if (!area.value.trim() || area.value === previous) {
      area.value = text;
      var confirm = field(row, "categories_public");
      if (confirm) confirm.checked = false;  // new categories: confirm them again
    }
  }

  document.querySelectorAll("[data-stat-row]").forEach(function (row) {
    var last = {};
    ["by", "by2"].forEach(function (name) { last[name] = builder.suggestions[value(row, name)] || ""; });
    row.addEventListener("change", function (event) {
      var name = event.target.name || "";
      if (/-by2?$/.test(name)) {
        var by = /-by2$/.test(name) ? "by2" : "by";
        suggest(row, by, by === "by" ? "categories" : "categories2", last[by]);
        last[by] = builder.suggestions[value(row, by)] || "";
      }
      update(row);
    });
    row.addEventListener("input", function () { placeholder(row); });  // as the bounds are typed
    update(row);
  });
})();
