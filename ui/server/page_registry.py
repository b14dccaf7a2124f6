"""The one list of the app's pages: app.py's navigation, the links (a page's name in the URL), the gallery's page
links and the smoke test all read it, so a page is added in one place."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PageEntry:
    """One page: `name` is its file in pages/ and its name in links; `title` the navigation's; `heading` its own."""

    name: str
    title: str
    icon: str
    heading: str
    default: bool = False

    @property
    def path(self) -> str:
        """The page script, relative to the repository root (what `st.Page` and `st.page_link` take)."""
        return f"pages/{self.name}.py"


PAGES: tuple[PageEntry, ...] = (
    PageEntry("home", "Home", ":material/home:", "Attention Studio", default=True),
    PageEntry("decode", "Decode", ":material/skip_next:", "Decode"),
    PageEntry("attention", "Attention", ":material/grid_on:", "Attention explorer"),
    PageEntry("compare", "Compare", ":material/compare:", "Compare"),
    PageEntry("train", "Train", ":material/model_training:", "Train"),
    PageEntry("learn", "Learn", ":material/school:", "Learn: attention step by step"),
    PageEntry("head", "One head", ":material/person_search:", "One head over a corpus"),
    PageEntry("dictionary", "Features", ":material/category:", "Dictionary features"),
)


def page_named(name: str) -> PageEntry:
    """The page of a link's page name; KeyError naming the pages for another one."""
    for page in PAGES:
        if page.name == name:
            return page
    raise KeyError(f"no page {name!r}; the pages are {', '.join(p.name for p in PAGES)}")


def page_titled(title: str) -> PageEntry:
    """The page whose navigation title is `title`."""
    for page in PAGES:
        if page.title == title.strip():
            return page
    raise KeyError(f"no page titled {title!r}")
