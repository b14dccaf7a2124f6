"""Altair charts to PNG or SVG with vl-convert (no browser needed)."""
from __future__ import annotations

from types import ModuleType

import altair as alt


class ChartExportError(RuntimeError):
    """A chart could not be rendered to PNG or SVG."""


def chart_to_png(chart: alt.TopLevelMixin, scale: float = 2.0) -> bytes:
    """PNG bytes of an Altair chart."""
    vlc = _vl_convert()
    try:
        return vlc.vegalite_to_png(chart.to_dict(), scale=scale, vl_version=_vl_version())
    except Exception as exc:  # vl-convert raises plain ValueError/RuntimeError with the renderer's message
        raise ChartExportError(f"could not render the chart as PNG: {exc}") from exc


def chart_to_svg(chart: alt.TopLevelMixin) -> str:
    """SVG text of an Altair chart."""
    vlc = _vl_convert()
    try:
        return vlc.vegalite_to_svg(chart.to_dict(), vl_version=_vl_version())
    except Exception as exc:
        raise ChartExportError(f"could not render the chart as SVG: {exc}") from exc


def _vl_convert() -> ModuleType:
    try:
        import vl_convert
    except ImportError as exc:
        raise ChartExportError("exporting charts needs the vl-convert-python package") from exc
    return vl_convert


def _vl_version() -> str:
    return ".".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])
