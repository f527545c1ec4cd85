// The overview's live part: server-sent events from /console/live
// replace it with the server's rendering whenever what is online changes.
// An "end" event (the session ended, or the address is refused) reloads
// the page, which then shows why; a "busy" event (too many live views
// are open) turns live updates off, and says so.
(function () {
  "use strict";
  var live = document.getElementById("live");
  var state = document.getElementById("live-state");
  if (!live || !window.EventSource) { return; }
  var es = new EventSource(live.getAttribute("data-source"));
  es.addEventListener("update", function (e) {
    live.innerHTML = e.data;
    if (state) { state.textContent = "Live."; }
  });
  es.addEventListener("busy", function (e) {
    es.close();
    if (state) { state.textContent = "Not live: " + e.data + "."; }
  });
  es.addEventListener("end", function () {
    es.close();
    window.location.reload();
  });
  es.onerror = function () {
    if (es.readyState === EventSource.CLOSED) {
      // Refused (the session ended): the page shows why.
      window.location.reload();
      return;
    }
    if (state) { state.textContent = "Reconnecting…"; }
  };
})();
