"""The Features page (docs/dictionaries.md): the dictionaries trained on the model shown and, beside them, the form
that trains one (the entry beside the model's card opens it); then the picked dictionary's finder and the feature's
page."""
from __future__ import annotations

import streamlit as st

from ui.models import ActiveModel

from ..features import (
    TRAIN_OPEN_KEY,
    pick_dictionary,
    show_dictionary_features,
    show_dictionary_training,
)
from ..kit import model_dictionaries


def show_dictionary_page(active: ActiveModel) -> None:
    """The page below its title."""
    c_pick, c_train = st.columns([3, 2])
    with c_train, st.expander("Train a dictionary on this model", icon=":material/model_training:", key=TRAIN_OPEN_KEY,
                              on_change="rerun"):  # opened by the entry beside the model's card too
        show_dictionary_training(active)
    with c_pick:
        picked = pick_dictionary(active, model_dictionaries(active))
    if picked is not None:
        show_dictionary_features(active, *picked)
