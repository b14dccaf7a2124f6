"""Presenter mode: large tokens and labels for a projector (1280x720), no sidebar, fewer controls, keyboard keys.

The switch is `present=1` in the link, the "Presenter mode" button in the sidebar, or the P key. The bar at the top
holds a strip of the pages, and a presentation clicker's page keys (PageUp / PageDown) open the previous / next page,
so a talk moves between pages without leaving presenter mode. Controls a speaker
does not need are hidden by their widget keys (Streamlit gives every keyed element the class `st-key-<key>`).
The charts keep their pixel size: with the sidebar gone they fill a 1280-pixel-wide screen (CSS zoom on them
clipped their axis titles).
"""
from __future__ import annotations

import streamlit as st

from ui.models import current_model
from ui.server import PAGES
from ui.views import LINK_PARAMS, PRESENT_KEY, SLIDES_SUFFIX, SWITCH_KEY, md, presenting

from .link_format import to_params
from .url_state import link_values

_DECODE, _ATTENTION = LINK_PARAMS["decode"], LINK_PARAMS["attention"]
HIDDEN_KEYS = (_DECODE["topk"], _DECODE["ref"], "decode_force_token", "decode_force", "decode_unforce", _DECODE["view"],
               "attention_downloads", "attention_grid_download_png", "attention_grid_download_svg",
               _ATTENTION["fixed"], "studio_share", "decode_replay", "home_intro")
PREV_PAGE_KEY, NEXT_PAGE_KEY = "PageUp", "PageDown"  # what a presentation clicker sends
_CSS = """
<style>
/* presenter mode */
html { font-size: 19px; }
section[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"], [data-testid="stHeader"],
[data-testid="stElementContainer"]:has([data-testid="stCaptionContainer"]), [data-testid="stCaptionContainer"],
%s { display: none !important; }
[data-testid="stMainBlockContainer"] { max-width: 100%%; padding: 0.6rem 1.6rem 1rem 1.6rem; }
h1 { font-size: 1.5rem !important; padding: 0.1rem 0 0.2rem 0 !important; }
/* the bar: the page strip at the left, the model and the way out at the right; the title starts below it */
.st-key-studio_present_bar { border-bottom: 1px solid #e5e7eb; padding-bottom: 0.2rem; flex-wrap: nowrap; }
.st-key-studio_present_bar > div { width: auto !important; flex: 0 1 auto; }
/* the strip on one line beside the model and the way out: eight pages with their icons took two lines at 1280 px,
   the second one under the first's links; the names alone fit */
.st-key-studio_present_pages { flex-wrap: nowrap; }
.st-key-studio_present_pages a { padding: 0 0.3rem; white-space: nowrap; }
.st-key-studio_present_pages [data-testid="stIconMaterial"] { display: none; }
.st-key-studio_present_bar p { font-size: 14px; }
/* the model and the way out on one line (the default model's name put "Leave" under it: a bar 41 px taller) */
.st-key-studio_present_model { flex-wrap: nowrap; gap: 0.5rem; }
.st-key-studio_present_model p { white-space: nowrap; font-size: 13px; }
/* the way out's key drawn as a key cap: a bare grey "P" after "Leave" read as a label cut short */
.st-key-studio_present_leave kbd { border: 1px solid #9ca3af; border-radius: 4px; padding: 0 0.35em;
  color: #374151 !important; font-size: 13px; line-height: 1.4; background: #f9fafb; }
/* the head and page keys' buttons stay mounted (their shortcuts work) but take no room */
[class*="_head_keys"], .st-key-studio_present_page_keys { position: absolute !important; left: -10000px; }
.studio-chart-heading { font-size: 20px; margin: 0.3rem 0 0.3rem 0; }  /* not touching its chart at this size */
/* Decode's side column holds the step's heading, Prev and Next, the output card and the top-k above 720 px */
[data-testid="stColumn"] > [data-testid="stVerticalBlock"] { gap: 0.6rem; }
[data-testid="stMain"] h3 { font-size: 1.15rem !important; padding: 0.2rem 0 !important; }
[class*="st-key-decode_output_"] { padding: 0.3rem 0.7rem 0.5rem 0.7rem !important; gap: 0 !important;
  height: auto !important; }
[class*="st-key-decode_output_"] [data-testid="stMarkdownContainer"] > p { font-size: 15px; }
[class*="st-key-decode_output_"] div:has(> span[title^="position"]) { line-height: 1.5 !important; }
[class*="st-key-decode_output_"] div:has(+ div > span[title^="position"]) { display: none; }  /* "output" */
[class*="st-key-decode_output_"] span[title^="position"] { font-size: 14px !important; line-height: 1.3 !important;
  padding: 0 5px !important; margin: 1px 2px !important; }
/* the QR code of the page's link and the address it holds, in a margin of its own at the right: the page's content
   ends left of it, so it never covers a chart or a control, and it stays in view as the page scrolls */
[data-testid="stMainBlockContainer"]:has(.st-key-studio_present_qr) { padding-right: calc(160px + 2.4rem); }
.st-key-studio_present_qr { position: fixed; right: 0.8rem; top: 0.6rem; z-index: 1000; width: 160px !important;
  background: #fff; padding: 6px 6px 4px 6px; border-radius: 8px; box-shadow: 0 1px 6px rgba(0,0,0,0.25);
  pointer-events: none; gap: 0; }
.st-key-studio_present_qr img { image-rendering: pixelated; }
div.st-key-studio_present_qr [data-testid="stElementContainer"],
div.st-key-studio_present_qr [data-testid="stCaptionContainer"] { display: block !important; }  /* its captions stay */
.st-key-studio_present_qr [data-testid="stImageCaption"] { width: auto !important; max-width: none !important;
  text-align: center; white-space: nowrap; }
.st-key-studio_present_qr [data-testid="stImageCaption"] p { font-size: 14px; color: #374151; }
.st-key-studio_present_qr [data-testid="stCaptionContainer"] p { font-size: 14px; color: #374151; text-align: center;
  overflow-wrap: anywhere; margin: 0; }
</style>
"""


def apply_presenter() -> None:
    """Inject presenter mode's CSS when it is on (no visible element)."""
    if presenting():
        hidden = ", ".join([*(f".st-key-{key}" for key in HIDDEN_KEYS), f'[class*="{SLIDES_SUFFIX} "]',
                            f'[class$="{SLIDES_SUFFIX}"]'])
        st.html(_CSS % hidden)


def _toggle() -> None:
    st.session_state[PRESENT_KEY] = not presenting()


def _page_strip(current: str | None) -> None:
    """The pages as a strip of links, and the clicker's page keys: hidden buttons that open the previous / next page."""
    with st.container(key="studio_present_pages", horizontal=True, gap=None, width="content"):
        for page in PAGES:
            st.page_link(page.path, label=page.title, icon=page.icon, query_params=_link_of(page.name))
    names = [page.name for page in PAGES]
    if current not in names:
        return
    at = names.index(current)
    with st.container(key="studio_present_page_keys", horizontal=True):
        if st.button("Previous page", key="studio_present_prev_page", shortcut=PREV_PAGE_KEY, disabled=at == 0):
            st.switch_page(PAGES[at - 1].path, query_params=_link_of(PAGES[at - 1].name))
        if st.button("Next page", key="studio_present_next_page", shortcut=NEXT_PAGE_KEY,
                     disabled=at == len(PAGES) - 1):
            st.switch_page(PAGES[at + 1].path, query_params=_link_of(PAGES[at + 1].name))


def _link_of(page: str) -> dict[str, str]:
    """The link of `page` as this session left it, with the model picked now: a page opened from the strip or by the
    clicker's keys shows the model on screen (without it, the page's last link came back with its own model)."""
    return to_params(link_values(page))


def presenter_switch(current: str | None = None) -> None:
    """The switch: a button in the sidebar, or (presenting, the sidebar hidden) a bar above the page with the page
    strip (`current`: the page shown, by its name in links), the model and a way out."""
    if presenting():  # the sidebar's model card is hidden: the bar still says which model and weights are shown
        with st.container(key="studio_present_bar", horizontal=True, horizontal_alignment="distribute",
                          vertical_alignment="center"):
            _page_strip(current)
            with st.container(horizontal=True, width="content", vertical_alignment="center",
                              key="studio_present_model"):
                active = current_model()
                if active is not None:
                    st.markdown(f"**{md(active.option.label)}** · {int(active.card.get('steps', 0)):,} steps",
                                width="content")
                st.button("Leave", key="studio_present_leave", on_click=_toggle, icon=":material/close:",
                          type="tertiary", shortcut=SWITCH_KEY, help="Leave presenter mode")
    else:
        st.sidebar.button("Presenter mode", key="studio_present_enter", on_click=_toggle, width="stretch",
                          icon=":material/co_present:", shortcut=SWITCH_KEY,
                          help="Large fonts, no sidebar, keys: ←/→ steps, H / Shift+H heads, PageUp / PageDown pages, "
                               "P leaves.")
