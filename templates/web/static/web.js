// The replay: the left and right arrow keys step back and forth (the links work without it).
document.addEventListener("keydown", function (event) {
  if (event.altKey || event.ctrlKey || event.metaKey) { return; }
  var id = event.key === "ArrowLeft" ? "prev" : event.key === "ArrowRight" ? "next" : null;
  var link = id && document.getElementById(id);
  if (link && link.href) { window.location.href = link.href; }
});

// Times in the viewer's own zone, the UTC time the server wrote kept beside (without
// script the page shows UTC alone): "5 Dec 2026, 19:00 CET (Europe/Prague), 18:00 UTC".
document.addEventListener("DOMContentLoaded", function () {
  var zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  if (!zone || zone === "UTC" || zone === "Etc/UTC") { return; }
  // in the page's language: the browser's own variant of it (en-GB, de-AT) if it has one
  var lang = document.documentElement.lang;
  var own = (navigator.languages || []).filter(function (l) { return l.split("-")[0] === lang; });
  var local = new Intl.DateTimeFormat(own.length ? own : (lang || undefined), {
    year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit",
    timeZoneName: "short"});
  document.querySelectorAll("time.utc[datetime]").forEach(function (el) {
    var when = new Date(el.getAttribute("datetime"));
    if (isNaN(when.getTime())) { return; }
    el.title = el.textContent;
    el.textContent = local.format(when) + " (" + zone + "), " + el.textContent;
  });
});
