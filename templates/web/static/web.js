// The replay: the left and right arrow keys step back and forth (the links work without it).
document.addEventListener("keydown", function (event) {
  if (event.altKey || event.ctrlKey || event.metaKey) { return; }
  var id = event.key === "ArrowLeft" ? "prev" : event.key === "ArrowRight" ? "next" : null;
  var link = id && document.getElementById(id);
  if (link && link.href) { window.location.href = link.href; }
});
