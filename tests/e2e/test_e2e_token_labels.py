"""Tokens that are Vega keywords, quotes, markup, emoji or right-to-left text draw in Chromium on every chart kind that
shows tokens: each chart paints its marks and its axis labels read back equal to the tokens, with no console error."""
from __future__ import annotations

import json

import vl_convert

from studio_browser import new_page
from tests.helpers.token_charts import token_charts

# each chart into its own div, as SVG; what each painted is read back from the page
_EMBED = """
window.drawn = {};
for (const [name, spec] of Object.entries(SPECS)) {
  const div = document.createElement("div");
  document.body.appendChild(div);
  try {
    await vegaEmbed(div, spec, {renderer: "svg", actions: false});
    const svg = div.querySelector("svg");
    const marks = [...svg.querySelectorAll(".role-mark")].filter(g => !g.closest(".role-axis, .role-legend"));
    window.drawn[name] = {
      marks: marks.reduce((n, g) => n + g.querySelectorAll("path, text, line").length, 0),
      axes: [...svg.querySelectorAll(".role-axis-label")].map(g => [...g.querySelectorAll("text")]
                                                                   .map(t => t.textContent)),
      texts: [...svg.querySelectorAll("text")].map(t => t.textContent)};
  } catch (error) {
    window.drawn[name] = {error: String(error)};
  }
}
window.drawnAll = true;
"""


def _page(specs: dict[str, dict]) -> str:
    """A page with Vega, Vega-Lite and vega-embed inlined (vl-convert's bundle: no network) drawing `specs`."""
    bundled = vl_convert.vegalite_to_html({"mark": "point"}, bundle=True)
    head = bundled[: bundled.rindex("</head>")]
    data = json.dumps(specs).replace("</", "<\\/")  # a `</script>` token must not close the script
    return (f"{head}</head><body><script type=\"module\">const SPECS = {data};\n{_EMBED}</script></body></html>")


def test_hostile_tokens_draw_on_every_chart_kind_in_chromium(tmp_path, browser):
    cases = token_charts()
    page_file = tmp_path / "charts.html"
    page_file.write_text(_page({c.name: c.chart.to_dict() for c in cases}), encoding="utf-8")
    errors: list[str] = []
    tab = new_page(browser)
    tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda e: errors.append(str(e)))
    tab.goto(page_file.as_uri())
    tab.wait_for_function("window.drawnAll === true", timeout=60_000)
    drawn = tab.evaluate("window.drawn")
    assert errors == []
    for case in cases:
        seen = drawn[case.name]
        assert "error" not in seen, f"{case.name}: {seen.get('error')}"
        assert seen["marks"] > 0, f"{case.name} painted no marks"
        if case.axis:
            assert list(case.labels) in seen["axes"], f"{case.name}: axis labels {seen['axes']}"
        else:
            assert [label for label in case.labels if label not in seen["texts"]] == [], case.name

