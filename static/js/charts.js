// Draws the charts whose data a page embeds as JSON (<script type="application/json"
// id="...">), with plotly.js served from this site. Every chart's numbers are also
// in a table on the page, so nothing is lost without JavaScript.
(function () {
  "use strict";
  var config = { responsive: true, displayModeBar: false };
  function draw() {
    if (!window.Plotly) return;
    document.querySelectorAll("[data-chart]").forEach(function (el) {
      var source = document.getElementById(el.dataset.chart);
      if (!source) return;
      var spec = JSON.parse(source.textContent);
      var layout = Object.assign({
        margin: { l: 60, r: 20, t: 30, b: 90 }, font: { family: "system-ui, sans-serif", size: 13 },
        paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)", legend: { orientation: "h", y: -0.35 }
      }, spec.layout || {});
      window.Plotly.newPlot(el, spec.data, layout, config);
      el.setAttribute("data-drawn", "true");
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", draw); else draw();
})();
