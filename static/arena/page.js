// Every page: one-off messages can be dismissed (the buttons show only where this runs).
(function () {
  "use strict";
  Array.prototype.forEach.call(document.querySelectorAll(".messages .dismiss"), function (b) {
    b.hidden = false;
    b.addEventListener("click", function () {
      var list = b.closest(".messages");
      b.closest("li").remove();
      if (list && !list.children.length) list.remove();
    });
  });
})();
