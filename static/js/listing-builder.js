// The listing builder's small helpers. The form works without them (the server
// builds each statistic from the posted inputs); with them, each statistic row shows
// only the inputs its kind reads (the others are disabled, so not posted), one more
// filter appears as one is used, and a sum's or mean's rounding grid shows, as its
// placeholder, the grid the server picks when it is left empty. Nothing is filled in
// from the data: categories and bounds are what the owner types (which values occur
// in the data is private; the page's data holds no value of it).
(function () {
  "use strict";
  var source = document.getElementById("listing-builder");
  if (!source) return;
  var builder = JSON.parse(source.textContent);

  function field(row, name) { return row.querySelector("[name$='-" + name + "']"); }
  function value(row, name) { var el = field(row, name); return el && !el.disabled ? el.value : ""; }
  function isDate(row, name) { return /^date/.test(builder.types[value(row, name)] || ""); }

  // The grid of a sum left without one (market.catalog.spec.default_grid): the smallest
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
    if ((builder.kinds[value(row, "kind")] || []).indexOf("radius") >= 0) {  // a centroid's: from its radius
      grid.placeholder = "from the radius";
      return;
    }
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
    // every input the kind reads (the server lists them per kind, from the registry), then the few
    // that depend on another input's value
    var visible = {kind: true};
    inputs.forEach(function (name) { visible[name] = true; });
    Object.assign(visible, {
      bins: has("bins") && !datedColumn,
      by: has("by"), by2: table, categories2: table,
      categories: has("categories") && (table || (grouped && !datedBy)),
      bin: datedBy, date_from: datedBy, date_to: datedBy,
      where: has("where")
    });
    visible.categories_public = visible.categories || has("synthetic_columns");
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

  document.querySelectorAll("[data-stat-row]").forEach(function (row) {
    row.addEventListener("change", function (event) {
      if (/-(by2?|categories2?)$/.test(event.target.name || "")) {
        var confirm = field(row, "categories_public");
        if (confirm) confirm.checked = false;  // other categories: confirm them again
      }
      update(row);
    });
    row.addEventListener("input", function () { placeholder(row); });  // as the bounds are typed
    update(row);
  });
})();
