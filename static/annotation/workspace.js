// Coding workspace: turn the browser selection into code-point offsets on the stored text, and apply codes by
// click or shortcut. Browsers count UTF-16 units; the server counts code points (an emoji is 2 units, 1 point).
(function () {
  "use strict";

  function codePoints(s) { let n = 0; for (const _ of s) n++; return n; }

  function story() { return document.getElementById("story"); }

  function pointToCp(root, node, offset) {
    if (node.nodeType === Node.TEXT_NODE) {
      const seg = node.parentElement && node.parentElement.closest(".seg");
      if (!seg || !root.contains(seg)) return null;
      return Number(seg.dataset.s) + codePoints(node.data.slice(0, offset));
    }
    if (node === root) {
      const kids = root.querySelectorAll(":scope > .seg");
      if (offset >= kids.length) return Number(root.dataset.length);
      return Number(kids[offset].dataset.s);
    }
    const seg = node.closest && node.closest(".seg");
    if (seg && root.contains(seg)) return offset === 0 ? Number(seg.dataset.s) : Number(seg.dataset.e);
    return null;
  }

  function currentSelection() {
    const root = story();
    const sel = window.getSelection();
    if (!root || !sel || sel.rangeCount === 0 || sel.isCollapsed) return null;
    const range = sel.getRangeAt(0);
    if (!range.intersectsNode(root)) return null;
    const start = root.contains(range.startContainer) ? pointToCp(root, range.startContainer, range.startOffset) : 0;
    const end = root.contains(range.endContainer) ? pointToCp(root, range.endContainer, range.endOffset) : Number(root.dataset.length);
    if (start === null || end === null || end <= start) return null;
    return { start: start, end: end, text: range.toString() };
  }

  function updateSelection() {
    const s = document.getElementById("sel-start"), e = document.getElementById("sel-end");
    const label = document.getElementById("selection");
    if (!s || !e) return;
    const cur = currentSelection();
    if (cur) {
      s.value = cur.start; e.value = cur.end;
      if (label) label.textContent = "Selected " + cur.start + "–" + cur.end + ": “" + cur.text.slice(0, 80) + "”";
    } else if (!(document.activeElement && document.activeElement.closest && document.activeElement.closest(".ws-side"))) {
      // keep the last selection while the user works in the side panel (e.g. naming a new code)
      s.value = ""; e.value = "";
      if (label) label.textContent = "Select text, then click a code or press its key.";
    }
  }

  document.addEventListener("selectionchange", updateSelection);
  document.addEventListener("mouseup", updateSelection);

  document.addEventListener("keydown", function (ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey || ev.key.length !== 1) return;
    const t = ev.target;
    if (t && (t.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(t.tagName))) return;
    const key = ev.key.toLowerCase();
    const button = Array.from(document.querySelectorAll(".code-btn[data-shortcut]"))
      .find(function (b) { return b.dataset.shortcut.toLowerCase() === key; });
    if (!button) return;
    ev.preventDefault();
    updateSelection();
    if (!document.getElementById("sel-start").value) {
      const label = document.getElementById("selection");
      if (label) label.textContent = "Select some text first, then press " + ev.key + ".";
      return;
    }
    button.click();
  });

  // Click a highlight: flash the codings it carries in the list.
  document.addEventListener("click", function (ev) {
    const seg = ev.target.closest && ev.target.closest(".seg.hl");
    if (!seg || !window.getSelection().isCollapsed) return;
    document.querySelectorAll(".codings li.flash").forEach(function (li) { li.classList.remove("flash"); });
    seg.dataset.c.split(" ").forEach(function (id) {
      const li = document.querySelector('.codings li[data-coding="' + id + '"]');
      if (li) { li.classList.add("flash"); li.scrollIntoView({ block: "nearest" }); }
    });
  });

  document.addEventListener("htmx:afterSwap", function () { window.getSelection().removeAllRanges(); });

  window.stereoscopeWorkspace = { currentSelection: currentSelection, codePoints: codePoints };
})();
