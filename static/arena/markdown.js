// The one markdown renderer both panes use. Safe by construction: every character of the
// model's text is HTML-escaped first, and only a fixed set of tags is added afterwards, so
// <script>, <img onerror=...> and friends always show as text.
(function () {
  "use strict";

  function escapeHtml(s) {
    return s
      .replace(/&/g, "&amp;")
      .replace(/</g, "&lt;")
      .replace(/>/g, "&gt;")
      .replace(/"/g, "&quot;")
      .replace(/'/g, "&#39;");
  }

  function inline(s) {
    // s is already escaped. Code spans first so their content is left alone.
    var parts = s.split(/(`[^`]+`)/g);
    return parts
      .map(function (part) {
        if (/^`[^`]+`$/.test(part)) return "<code>" + part.slice(1, -1) + "</code>";
        return part
          .replace(/\*\*(\S(?:.*?\S)?)\*\*/g, "<strong>$1</strong>")
          .replace(/__(\S(?:.*?\S)?)__/g, "<strong>$1</strong>")
          .replace(/(^|[^*])\*(\S(?:.*?\S)?)\*(?!\*)/g, "$1<em>$2</em>");
      })
      .join("");
  }

  function render(text) {
    var lines = text.replace(/\r\n?/g, "\n").split("\n");
    var out = [];
    var para = [];
    var list = null; // "ul" | "ol"
    var inCode = false;
    var code = [];

    function flushPara() {
      if (para.length) out.push("<p>" + inline(escapeHtml(para.join(" "))) + "</p>");
      para = [];
    }
    function closeList() {
      if (list) out.push("</" + list + ">");
      list = null;
    }

    lines.forEach(function (line) {
      if (inCode) {
        if (/^\s*(```|~~~)/.test(line)) {
          out.push("<pre><code>" + escapeHtml(code.join("\n")) + "</code></pre>");
          inCode = false;
          code = [];
        } else {
          code.push(line);
        }
        return;
      }
      if (/^\s*(```|~~~)/.test(line)) {
        flushPara();
        closeList();
        inCode = true;
        return;
      }
      var h = /^ {0,3}(#{1,6})\s+(.*)$/.exec(line);
      if (h) {
        flushPara();
        closeList();
        var level = Math.min(h[1].length + 2, 6); // keep answer headings below the page's own
        out.push("<h" + level + ">" + inline(escapeHtml(h[2])) + "</h" + level + ">");
        return;
      }
      var ul = /^\s*[-*+]\s+(.*)$/.exec(line);
      var ol = /^\s*\d+[.)]\s+(.*)$/.exec(line);
      if (ul || ol) {
        flushPara();
        var kind = ul ? "ul" : "ol";
        if (list !== kind) {
          closeList();
          out.push("<" + kind + ">");
          list = kind;
        }
        out.push("<li>" + inline(escapeHtml((ul || ol)[1])) + "</li>");
        return;
      }
      if (!line.trim()) {
        flushPara();
        closeList();
        return;
      }
      closeList();
      para.push(line.trim());
    });
    if (inCode) out.push("<pre><code>" + escapeHtml(code.join("\n")) + "</code></pre>");
    flushPara();
    closeList();
    return out.join("\n");
  }

  window.ArenaMarkdown = { render: render, escapeHtml: escapeHtml };
})();
