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

  // ---- Keyboard span coding ------------------------------------------------------------------------------
  // With the story focused: ←/→ word, ↑/↓ sentence, Shift extends, Home/End story start/end, Esc shrinks the
  // selection to one word, a code's key codes the selection, Enter goes to the coding under the cursor.
  // In the codings list: Delete removes the focused coding, Esc returns to the story.

  const WORD = /[\p{L}\p{N}\p{M}\p{Extended_Pictographic}\u200d\ufe0f]+(?:['’-][\p{L}\p{N}\p{M}]+)*/gu;
  const SENTENCE_END = /[.!?…]+["”’)\]]*(?=\s|$)|\n+/gu;
  let kbd = { anchor: 0, focus: 0 };     // word indexes
  let resume = null;                      // what to focus after the workspace is re-rendered

  function cpIndex(s, utf16) { return codePoints(s.slice(0, utf16)); }

  // Words [{s, e, sentence}] in code points, from the story's text.
  function words(root) {
    const text = root.textContent;
    const ends = [];
    for (const m of text.matchAll(SENTENCE_END)) ends.push(cpIndex(text, m.index + m[0].length));
    const out = [];
    for (const m of text.matchAll(WORD)) {
      const s = cpIndex(text, m.index), e = s + codePoints(m[0]);
      let sentence = ends.findIndex(function (end) { return s < end; });
      if (sentence < 0) sentence = ends.length;
      out.push({ s: s, e: e, sentence: sentence });
    }
    return out;
  }

  // A DOM point for a code-point offset inside the story's segments.
  function cpToPoint(root, cp) {
    const segs = root.querySelectorAll(":scope > .seg");
    for (const seg of segs) {
      const s = Number(seg.dataset.s), e = Number(seg.dataset.e);
      if (cp < s || cp > e) continue;
      let left = cp - s;
      const walker = document.createTreeWalker(seg, NodeFilter.SHOW_TEXT);
      while (walker.nextNode()) {
        const node = walker.currentNode, chars = Array.from(node.data);
        if (left <= chars.length) return [node, chars.slice(0, left).join("").length];
        left -= chars.length;
      }
    }
    return [root, root.childNodes.length];
  }

  function showSelection(root, list) {
    if (!list.length) return;
    const a = list[Math.min(kbd.anchor, kbd.focus)], b = list[Math.max(kbd.anchor, kbd.focus)];
    const range = document.createRange();
    const [sn, so] = cpToPoint(root, a.s), [en, eo] = cpToPoint(root, b.e);
    range.setStart(sn, so); range.setEnd(en, eo);
    const sel = window.getSelection();
    sel.removeAllRanges(); sel.addRange(range);
    updateSelection();
    const el = (en.nodeType === Node.TEXT_NODE ? en.parentElement : en);
    if (el && el.scrollIntoView) el.scrollIntoView({ block: "nearest" });
  }

  // Sync the word cursor with a selection made by mouse.
  function syncFromSelection(list) {
    const cur = currentSelection();
    if (!cur) return;
    const first = list.findIndex(function (w) { return w.e > cur.start; });
    let last = -1;
    list.forEach(function (w, i) { if (w.s < cur.end) last = i; });
    if (first >= 0 && last >= first) { kbd.anchor = first; kbd.focus = last; }
  }

  function sentenceBounds(list, sentence) {
    let first = -1, last = -1;
    list.forEach(function (w, i) { if (w.sentence === sentence) { if (first < 0) first = i; last = i; } });
    return [first, last];
  }

  function moveCursor(ev, root) {
    const list = words(root);
    if (!list.length) return false;
    syncFromSelection(list);
    const n = list.length, f = Math.min(kbd.focus, n - 1), extend = ev.shiftKey;
    let target = f;
    const [sFirst, sLast] = sentenceBounds(list, list[f].sentence);
    switch (ev.key) {
      case "ArrowRight": target = Math.min(f + 1, n - 1); break;
      case "ArrowLeft": target = Math.max(f - 1, 0); break;
      case "Home": target = 0; break;
      case "End": target = n - 1; break;
      case "ArrowDown":
        if (extend) target = f < sLast ? sLast : sentenceBounds(list, list[Math.min(f + 1, n - 1)].sentence)[1];
        else target = sLast + 1 < n ? sLast + 1 : f;
        break;
      case "ArrowUp":
        if (f > sFirst) target = sFirst;
        else target = f > 0 ? sentenceBounds(list, list[f - 1].sentence)[0] : 0;
        break;
      case "Escape": kbd.anchor = f; target = f; break;
      default: return false;
    }
    kbd.focus = target;
    if (!extend) kbd.anchor = target;
    showSelection(root, list);
    return true;
  }

  function codeName(button) {
    return Array.from(button.childNodes).filter(function (n) { return n.nodeType === Node.TEXT_NODE; })
      .map(function (n) { return n.data; }).join("").trim();
  }

  function codingItem(id) { return document.querySelector('#codings li[data-coding="' + id + '"]'); }

  function focusCodingUnderCursor(root) {
    const cur = currentSelection();
    if (!cur) return;
    const seg = Array.from(root.querySelectorAll(".seg.hl"))
      .find(function (s) { return Number(s.dataset.s) < cur.end && Number(s.dataset.e) > cur.start; });
    const label = document.getElementById("selection");
    const li = seg && codingItem(seg.dataset.c.split(" ")[0]);
    if (!li) { if (label) label.textContent = "No coding under the cursor."; return; }
    li.setAttribute("tabindex", "-1");
    li.focus();
  }

  let pointerAt = 0;  // a click or drag focuses the story too: then the mouse selection wins
  document.addEventListener("pointerdown", function () { pointerAt = Date.now(); }, true);

  document.addEventListener("focusin", function (ev) {
    const root = story();
    if (ev.target !== root || Date.now() - pointerAt < 1000) return;
    if (!currentSelection()) {  // arriving by Tab: start at the first word (or where the cursor was)
      const list = words(root);
      kbd.anchor = Math.min(kbd.anchor, list.length - 1); kbd.focus = Math.min(kbd.focus, list.length - 1);
      showSelection(root, list);
    }
  });

  document.addEventListener("keydown", function (ev) {
    const root = story();
    if (!root || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (ev.target === root) {
      if (ev.key === "Enter") { ev.preventDefault(); focusCodingUnderCursor(root); return; }
      if (moveCursor(ev, root)) ev.preventDefault();
      return;
    }
    const li = ev.target.closest && ev.target.closest("#codings li[data-coding]");
    if (li && ev.target === li && (ev.key === "Delete" || ev.key === "Backspace")) {
      const remove = li.querySelector(".unassign");
      if (remove) { ev.preventDefault(); remove.click(); }
    } else if (li && ev.key === "Escape" && ev.target.tagName !== "SELECT") {
      ev.preventDefault(); root.focus();
    }
  }, true);

  // Remember where the coder was, to come back there after the workspace is re-rendered.
  document.addEventListener("htmx:beforeRequest", function (ev) {
    const el = document.activeElement, root = story();
    const source = ev.detail && ev.detail.elt;
    const params = (ev.detail && ev.detail.requestConfig && ev.detail.requestConfig.parameters) || {};
    resume = null;
    if (!root || !document.getElementById("ws").contains(source)) return;
    const codeBtn = source.closest && source.closest(".code-btn");
    const li = el && el.closest && el.closest("#codings li[data-coding]");
    const quote = (currentSelection() || {}).text;
    const op = params.op || (source.querySelector && (source.querySelector("[name=op]") || {}).value);
    const varForm = source.closest && source.closest(".variable-form");
    if (varForm) {  // a value of a variable: come back to the chosen value, not to <body>
      const checked = varForm.querySelector("input[type=radio]:checked");
      resume = { op: "value", variable: varForm.querySelector("[name=variable]").value,
                 value: checked ? checked.value : "" };
      return;
    }
    resume = { op: op,
               story: el === root || !!codeBtn || op === "new_code",  // back to the text that was just coded
               coding: li && li.dataset.coding, id: el && el.id,
               code: codeBtn ? codeName(codeBtn) : "", quote: quote,
               after: kbd.focus + 1 };
  });

  // A saved coding's answer is swapped out of band, fragment by fragment, and htmx:afterSwap fires once for each:
  // act once per answer, after all of them are in the page.
  let answered = null;
  function firstSwapOf(ev) {
    const xhr = ev.detail && ev.detail.xhr;
    if (xhr && xhr === answered) return false;
    answered = xhr || null;
    return true;
  }

  // On swap, not settle: a selection made right after the new story appears must not be overwritten.
  document.addEventListener("htmx:afterSwap", function (ev) {
    if (!firstSwapOf(ev)) return;
    window.getSelection().removeAllRanges();
    const root = story();
    const r = resume;
    resume = null;
    if (!root || !r) return;
    const error = document.getElementById("ws-error");
    if (error) { error.focus(); return; }  // the live region reads it
    const say = window.stereoscopeAnnounce || function () {};
    if (r.variable) {
      const radios = variableRadios(r.variable);
      const radio = radios.find(function (x) { return x.value === r.value; }) ||
        radios.find(function (x) { return x.checked; }) || radios[0];
      if (radio) {
        radio.focus();
        const legend = radio.closest("fieldset").querySelector("legend");
        say((legend ? legend.textContent + ": " : "") + valueName(radio) + " saved.");
      }
    } else if (r.story) {
      const list = words(root);
      kbd.anchor = kbd.focus = Math.min(r.after, Math.max(list.length - 1, 0));
      root.focus();
      showSelection(root, list);
      if (r.op === "code") say("Coded “" + (r.quote || "") + "” as " + r.code + ".");
    } else if (r.coding) {
      const li = codingItem(r.coding);
      if (li) { li.setAttribute("tabindex", "-1"); li.focus(); }
      else { const h = document.getElementById("codings-heading"); if (h) h.focus(); }
      say(r.op === "delete" ? "Coding removed." : r.op === "reassign" ? "Coding reassigned to " +
          (li ? li.querySelector(".coding-code").textContent : "the new code") + "." : "Saved.");
    } else {
      const again = r.id && document.getElementById(r.id);
      if (again) again.focus();
      say(r.op === "code" ? "Whole story coded." : r.op === "delete" ? "Coding removed." : "Saved.");
    }
  });

  // ---- Variables (one value per story) --------------------------------------------------------------------
  // In a variable, 1-9 choose a value by position (arrow keys work too); a value's own key chooses it from anywhere
  // outside a text field; the jump key (V, unless a code takes it) focuses the first variable still to choose;
  // Ctrl+Enter is "Done, next". Each choice saves at once, and focus comes back to the chosen value.

  function variableRadios(variable) {
    return Array.from(document.querySelectorAll('#variables input[type=radio][data-variable="variable-' + variable + '"]'));
  }

  function valueName(radio) {
    const label = radio.closest("label");
    return label ? Array.from(label.childNodes).filter(function (n) { return n.nodeType === Node.TEXT_NODE; })
      .map(function (n) { return n.data; }).join("").trim() : "";
  }

  function chooseValue(radio) {
    radio.focus();
    if (radio.checked) return;
    radio.checked = true;
    radio.dispatchEvent(new Event("change", { bubbles: true }));
  }

  // The first variable still to choose (its first value), else the first variable's chosen value.
  function variableToFocus() {
    const sets = Array.from(document.querySelectorAll("#variables fieldset"));
    const open = sets.find(function (f) { return !f.querySelector("input[type=radio]:checked"); });
    if (open) return open.querySelector("input[type=radio]");
    return sets.length ? sets[0].querySelector("input[type=radio]:checked") : null;
  }

  function isTextField(t) {
    return t && (t.isContentEditable || t.tagName === "TEXTAREA" || t.tagName === "SELECT" ||
      (t.tagName === "INPUT" && !["radio", "checkbox", "button", "submit"].includes(t.type)));
  }

  document.addEventListener("keydown", function (ev) {
    const t = ev.target;
    if ((ev.ctrlKey || ev.metaKey) && ev.key === "Enter" && !(t && t.tagName === "TEXTAREA")) {
      const done = document.getElementById("done-next");
      if (done) { ev.preventDefault(); ev.stopPropagation(); done.click(); }
      return;
    }
    if (ev.ctrlKey || ev.metaKey || ev.altKey || ev.key.length !== 1 || !document.getElementById("variables")) return;
    const key = ev.key.toLowerCase();
    const ownKey = function (r) { return (r.dataset.shortcut || "").toLowerCase() === key; };
    const inVariable = t && t.closest && t.closest("#variables fieldset");
    if (inVariable) {  // the focused variable: a value's own key, else its position
      const radios = Array.from(inVariable.querySelectorAll("input[type=radio]"));
      const radio = radios.find(ownKey) || (/^[1-9]$/.test(key) ? radios[Number(key) - 1] : null);
      if (radio) { ev.preventDefault(); ev.stopPropagation(); chooseValue(radio); return; }
    }
    if (isTextField(t)) return;
    const own = Array.from(document.querySelectorAll("#variables input[type=radio][data-shortcut]")).find(ownKey);
    if (own) { ev.preventDefault(); ev.stopPropagation(); chooseValue(own); return; }
    const jump = document.getElementById("variables").dataset.jump;
    if (jump && key === jump) {
      const radio = variableToFocus();
      if (radio) { ev.preventDefault(); ev.stopPropagation(); radio.focus(); }
    }
  }, true);

  // On opening a story, start on its variables when the codebook has nothing else to code with the keyboard
  // (no code buttons): the coder chooses a value at once, then Ctrl+Enter.
  function focusVariableOnLoad() {
    if (!document.getElementById("variables") || document.querySelector(".code-btn")) return;
    const a = document.activeElement;
    if (a && a !== document.body) return;  // the coder is already somewhere
    const radio = variableToFocus();
    if (radio) radio.focus();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", focusVariableOnLoad);
  else focusVariableOnLoad();

  window.stereoscopeWorkspace = { currentSelection: currentSelection, codePoints: codePoints, words: words };
})();
