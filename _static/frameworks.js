// The book shows each chapter's code in MXNet and in PyTorch: a cell of
// one framework carries the class tag_tab-mxnet or tag_tab-pytorch
// (myst-nb's class for the cell's tag). The reader picks a framework in
// any tab-set of the sync group "framework" (sphinx-design remembers the
// choice across pages); this script marks the page with it, and
// frameworks.css hides the other framework's cells. Without JavaScript
// both frameworks' cells show.
(function () {
  "use strict";
  var GROUP = "framework";
  var KEY = "sphinx-design-tab-id-" + GROUP; // sphinx-design's storage key

  function labels() {
    return document.querySelectorAll(
      '.sd-tab-label[data-sync-group="' + GROUP + '"]'
    );
  }

  // The framework of the checked tab (its radio input precedes the label).
  function chosen() {
    var found = null;
    labels().forEach(function (label) {
      var input = label.previousElementSibling;
      if (!found && input && input.checked) {
        found = label.getAttribute("data-sync-id");
      }
    });
    if (found) return found;
    try {
      return window.localStorage.getItem(KEY) || "mxnet";
    } catch (err) {
      return "mxnet";
    }
  }

  function apply() {
    document.documentElement.setAttribute("data-framework", chosen());
  }

  // A tab cell's source starts with d2l's marker line "#@tab NAME": the
  // tab already says which framework, so the line is not shown.
  function dropMarkers() {
    document
      .querySelectorAll(
        ".tag_tab-mxnet .cell_input pre, .tag_tab-pytorch .cell_input pre"
      )
      .forEach(function (pre) {
        // Pygments may open with an empty span: the marker is the first
        // element with text.
        var first = pre.firstElementChild;
        while (first && !first.textContent) first = first.nextElementSibling;
        if (!first || !/^#@tab\s+\w+$/.test(first.textContent.trim())) return;
        var next = first.nextSibling;
        pre.removeChild(first);
        if (next && next.nodeType === Node.TEXT_NODE) {
          next.textContent = next.textContent.replace(/^\n/, "");
        }
      });
  }

  document.addEventListener("DOMContentLoaded", function () {
    dropMarkers();
    labels().forEach(function (label) {
      var input = label.previousElementSibling;
      if (input) input.addEventListener("change", apply);
    });
    // after sphinx-design's own handler has checked the stored tab
    window.setTimeout(apply, 0);
  });
  apply(); // early, from the stored choice: no flash of both frameworks
})();
