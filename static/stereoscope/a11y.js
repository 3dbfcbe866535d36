// Accessibility helpers for every page: one polite live region that announces the htmx updates that matter
// (progress, saved work, errors), and focus that is not lost when htmx swaps the focused element away.
(function () {
  "use strict";

  const PROGRESS_EVERY_MS = 10000;  // progress polls every 1-2 s; announce it at most this often
  let lastText = "", lastProgressAt = 0;

  function region() { return document.getElementById("live-region"); }

  function announce(text) {
    const live = region();
    text = (text || "").replace(/\s+/g, " ").trim();
    if (!live || !text) return;
    // clear first so that the same message said twice is read twice
    live.textContent = "";
    window.setTimeout(function () { live.textContent = text; }, 50);
    lastText = text;
  }

  // Elements marked data-announce ("progress", "status" or "error") are read when they change after a swap.
  function announceMarked() {
    const now = Date.now();
    const parts = [];
    let progressOnly = true;
    document.querySelectorAll("[data-announce]").forEach(function (el) {
      if (el.closest("[hidden]")) return;
      parts.push(el.textContent);
      if (el.dataset.announce !== "progress") progressOnly = false;
    });
    const text = parts.join(". ").replace(/\s+/g, " ").trim();
    if (!text || text === lastText) return;
    if (progressOnly && now - lastProgressAt < PROGRESS_EVERY_MS) return;
    if (progressOnly) lastProgressAt = now;
    announce(text);
  }

  // Remember what had focus before a swap; put focus back on its replacement (same id, or the same form's
  // first control), or on the swapped content, never leave it on <body>.
  let focusBefore = null;
  document.addEventListener("htmx:beforeSwap", function () {
    const el = document.activeElement;
    if (!el || el === document.body) { focusBefore = null; return; }
    const form = el.form || (el.closest && el.closest("form"));
    focusBefore = { id: el.id, name: el.getAttribute("name"), formId: form && form.id };
  });

  function restoreFocus(target) {
    if (document.activeElement && document.activeElement !== document.body) return;
    const before = focusBefore;
    focusBefore = null;
    if (!before) return;
    let el = before.id && document.getElementById(before.id);
    if (!el && before.formId) {
      const form = document.getElementById(before.formId);
      const named = form && before.name &&
        form.querySelector('[name="' + CSS.escape(before.name) + '"]:not([type=hidden])');
      el = named || (form && form.querySelector("input:not([type=hidden]), select, textarea, button"));
    }
    if (!el && target && document.body.contains(target)) {
      el = target;
      if (!el.hasAttribute("tabindex")) el.setAttribute("tabindex", "-1");
    }
    if (el && el.focus) el.focus({ preventScroll: false });
  }

  document.addEventListener("htmx:afterSettle", function (ev) {
    announceMarked();
    restoreFocus(ev.detail && ev.detail.target);
  });
  document.addEventListener("htmx:responseError", function (ev) {
    const xhr = ev.detail && ev.detail.xhr;
    announce("Not saved: the server answered " + (xhr ? xhr.status : "with an error") + ".");
  });
  document.addEventListener("htmx:sendError", function () { announce("Not saved: the server could not be reached."); });

  window.stereoscopeAnnounce = announce;
})();
