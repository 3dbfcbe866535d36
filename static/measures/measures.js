// Lexicon layer toggles: one checkbox per category, one for the whole layer.
(function () {
  function refresh(layer) {
    var off = new Set();
    layer.querySelectorAll("input[data-lx-toggle]").forEach(function (box) { if (!box.checked) off.add(box.dataset.lxToggle); });
    var colors = {};
    (layer.dataset.lxColors || "").split(" ").forEach(function (pair) { var p = pair.split(":"); if (p[1]) colors[p[0]] = p[1]; });
    layer.querySelectorAll("mark.lx").forEach(function (mark) {
      var visible = mark.dataset.cats.split(" ").filter(function (c) { return !off.has(c); });
      mark.classList.toggle("lx-hidden", visible.length === 0);
      if (visible.length) {
        mark.style.backgroundColor = colors[visible[0]] + "33";
        mark.style.borderBottom = "2px solid " + colors[visible[0]];
      }
    });
  }
  document.addEventListener("change", function (event) {
    var layer = event.target.closest(".lexicon-layer");
    if (!layer) return;
    if (event.target.matches("input[data-lx-all]")) layer.classList.toggle("lx-off", !event.target.checked);
    if (event.target.matches("input[data-lx-toggle]")) refresh(layer);
  });
})();
