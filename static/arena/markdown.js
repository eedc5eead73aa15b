// The one markdown renderer every answer pane uses (battle and compare): markdown-it for the
// syntax (tables, links, lists, quotes, code), highlight.js for code blocks, KaTeX for $…$ and
// \[…\] math, then DOMPurify over the result. All are pinned files in static/vendor/ (see
// package.json). Raw HTML in an answer is never markup: markdown-it shows it as text, and
// DOMPurify would drop anything active that got through. Links open apart from the page with
// rel="noopener nofollow ugc"; only http(s) and mailto links are kept. Images are never
// fetched: an answer's image shows as its description, since even a same-origin one would
// send a request with the rater's cookies. Entities stay as typed (&#67;laude is not a
// name the server's redaction would miss).
(function () {
  "use strict";

  var SAFE_LINK = /^(https?:|mailto:)/i;

  var md = window.markdownit({
    html: false,
    linkify: true,
    typographer: false,
    highlight: function (code, lang) {
      if (!lang || !window.hljs.getLanguage(lang)) return "";
      try {
        return window.hljs.highlight(code, { language: lang, ignoreIllegals: true }).value;
      } catch (err) {
        return "";
      }
    },
  });
  md.disable("entity");
  md.renderer.rules.image = function (tokens, idx) {
    var alt = tokens[idx].content || "image";
    return "<span class=\"image-alt\">[" + md.utils.escapeHtml(alt) + "]</span>";
  };
  md.use(window.texmath, {
    engine: window.katex,
    delimiters: ["dollars", "brackets"],
    // trust: false keeps \href, \url and HTML extensions out; the limits keep a hostile
    // formula from taking the tab down.
    katexOptions: { throwOnError: false, trust: false, maxSize: 20, maxExpand: 500 },
  });
  // markdown-it's own check lets data: images through; a link or image here is http(s) or
  // mailto, or relative to this site, and nothing else.
  md.validateLink = function (url) {
    var trimmed = url.trim();
    return SAFE_LINK.test(trimmed) || !/^[a-z][a-z0-9+.-]*:/i.test(trimmed);
  };

  var purify = window.DOMPurify;
  purify.addHook("afterSanitizeAttributes", function (node) {
    if (node.tagName === "A" && node.hasAttribute("href")) {
      node.setAttribute("target", "_blank");
      node.setAttribute("rel", "noopener nofollow ugc");
    }
  });
  var PURIFY = {
    ALLOWED_URI_REGEXP: /^(?:(?:https?|mailto):|[^a-z]|[a-z+.-]+(?:[^a-z+.\-:]|$))/i,
    FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "img"],
    FORBID_ATTR: ["id", "name"],
    ADD_ATTR: ["target"],
  };

  function render(text) {
    return purify.sanitize(md.render(text || ""), PURIFY);
  }

  window.ArenaMarkdown = { render: render };
})();
