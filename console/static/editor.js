// The traffic-policy editor: each error that names a line ("line 6 (...)")
// gets a button that puts the cursor on that line of the document. The
// page works without it.
(function () {
  "use strict";
  var editor = document.getElementById("value");
  var errors = document.getElementById("value-error");
  if (!editor || !errors) { return; }
  Array.prototype.forEach.call(errors.querySelectorAll("p"), function (p) {
    var m = /^line (\d+)/.exec(p.textContent);
    if (!m) { return; }
    var line = parseInt(m[1], 10);
    var b = document.createElement("button");
    b.type = "button";
    b.className = "goto";
    b.textContent = "Go to line " + line;
    b.addEventListener("click", function () {
      var lines = editor.value.split("\n");
      var start = 0;
      for (var i = 0; i < line - 1 && i < lines.length; i++) { start += lines[i].length + 1; }
      var end = start + (lines[line - 1] || "").length;
      editor.focus();
      editor.setSelectionRange(start, end);
      var lh = parseFloat(window.getComputedStyle(editor).lineHeight) || 20;
      editor.scrollTop = Math.max(0, (line - 3) * lh);
    });
    p.appendChild(document.createTextNode(" "));
    p.appendChild(b);
  });
})();
