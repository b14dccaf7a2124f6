"""A little CSS on top of the theme in .streamlit/config.toml: less empty space above each page, chart headings, small
tables (`ui.widgets.small_table`), no "Download as PNG" in the chart toolbar (the pages' own PNG / SVG buttons export
charts; two PNGs confused users), a full-width chart wider than the page scrolling inside itself (never cut off; a
chart in a column keeps the few pixels it may take of the gap beside it), a sidebar wide enough for the model
picker's labels (a user can still widen it), a page title and Decode's step heading small enough that a page's main
picture is on a 1280x720 first screen; and one script that keeps chart gradients painted (`_SVG_URLS`)."""
import streamlit as st

SIDEBAR_PX = 360  # the sidebar's least width (Streamlit's 300 cut "autosave-reverse-…  ·  Saved run")

_CSS = """
<style>
[data-testid="stMainBlockContainer"] { padding-top: 2.2rem; padding-bottom: 3rem; }
[data-testid="stSidebarHeader"] { margin-bottom: 0.5rem; }
[data-testid="stMain"] h1 { font-size: 2.1rem; padding: 0.3rem 0 0.5rem 0; }
.st-key-decode_step_heading h3 { font-size: 1.15rem; padding: 0 0 0.2rem 0; }
[data-testid="stElementToolbar"] button[aria-label="Download as PNG"] { display: none; }
[data-testid="stElementContainer"]:not([data-testid="stColumn"] *):has([data-testid="stVegaLiteChart"]) {
  overflow-x: auto; overflow-y: hidden; }
section[data-testid="stSidebar"][data-collapsed="false"] { min-width: %dpx; }
.studio-chart-heading { font-weight: 600; font-size: 14px; color: #1f2937; margin: 0.2rem 0 -0.1rem 0; }
.studio-table { max-height: 23rem; overflow-y: auto; border: 1px solid #e5e7eb; border-radius: 0.5rem; }
.studio-table table { width: 100%%; border-collapse: collapse; margin: 0; font-size: 14px; }
.studio-table th, .studio-table td { border: none; border-bottom: 1px solid #eef0f3; padding: 0.3rem 0.6rem; }
.studio-table th { position: sticky; top: 0; background: #f8f9fb; font-weight: 400; color: #4b5563; text-align: left; }
.studio-table .studio-number { text-align: right; font-variant-numeric: tabular-nums; }
.studio-table th.studio-help { text-decoration: underline dotted; cursor: help; }
[data-testid="stElementContainer"]:has(.studio-svg-urls) { display: none; }
</style>
"""

# Vega's SVG renderer points a gradient (a colour legend) at `url(<the page's URL when drawn>#gradient_N)`; the app then
# writes the view into the address bar (query parameters), the old URL names another document, and the legend is left
# unpainted. Streamlit's page has no <base>, so `url(#gradient_N)` always names this page's gradient: every fill or
# stroke that points into a document by its full URL is rewritten to the fragment alone, as Vega sets it.
_SVG_URLS = """
<span class="studio-svg-urls"></span>
<script>
(() => {
  if (window.studioSvgUrls) return;
  window.studioSvgUrls = true;
  const local = (el) => {
    for (const name of ["fill", "stroke"]) {
      const value = el.getAttribute && el.getAttribute(name);
      if (value && value.startsWith("url(") && !value.startsWith("url(#") && value.includes("#")) {
        el.setAttribute(name, "url(#" + value.slice(value.lastIndexOf("#") + 1));
      }
    }
  };
  const all = (root) => root.querySelectorAll('[fill^="url("], [stroke^="url("]').forEach(local);
  new MutationObserver((changes) => {
    for (const change of changes) {
      if (change.type === "attributes") local(change.target);
      else change.addedNodes.forEach((node) => { if (node.nodeType === 1) { local(node); all(node); } });
    }
  }).observe(document.body, {subtree: true, childList: true, attributes: true, attributeFilter: ["fill", "stroke"]});
  all(document);
})();
</script>
"""


def apply_theme() -> None:
    """Inject the app's CSS and the gradients' script (no visible element)."""
    st.html(_CSS % SIDEBAR_PX)
    st.html(_SVG_URLS, unsafe_allow_javascript=True)
