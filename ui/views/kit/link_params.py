"""The one table of each page's link parameters (the widget key each restores) and the expanders they open: a leaf
module, so that any widget may read it."""
from __future__ import annotations

# page -> link parameter -> the session-state key of the widget it restores: the one place these keys are spelled
# (the modules that draw the widgets, ui.links and the tests read them from here)
LINK_PARAMS: dict[str, dict[str, str]] = {
    "home": {"text": "home_text", "layer": "home_layer"},
    "decode": {"text": "decode_text", "ref": "decode_reference", "topk": "decode_top_k", "view": "decode_view",
               "step": "decode_step", "layer": "decode_layer", "head": "decode_head", "ablate": "decode_ablate",
               "temperature": "decode_temperature", "sample_topk": "decode_sample_top_k", "top_p": "decode_top_p",
               "seed": "decode_seed", "pair": "decode_pair", "masks": "decode_mask_positions",
               "segment": "decode_segment", "pfrom": "decode_patch_from", "psite": "decode_patch_site",
               "beam": "decode_beam_width", "enc_layer": "decode_lens_encoder_layer", "gold": "decode_gold",
               "attr": "decode_attr_method", "pred": "decode_prediction", "lens": "decode_lens_open",
               "inside": "decode_inside_kind", "qkk": "decode_qk_key", "tau": "decode_route_threshold",
               "group": "row_group", "dsteps": "document_steps", "zoom": "map_zoom",
               "oscale": "map_overview_scale", "poll": "decode_poll", "votes": "decode_poll_votes"},
    "attention": {"text": "attention_text", "mode": "attention_mode", "ref": "attention_reference",
                  "kind": "attention_kind", "layer": "attention_layer", "head": "attention_head",
                  "fixed": "attention_fixed_scale", "hide": "attention_hide_sinks", "combine": "attention_combine",
                  "ablate": "attention_ablate", "show": "attention_show", "pair": "attention_pair",
                  "segment": "attention_segment", "query": "attention_inside_query", "gold": "attention_gold",
                  "colour": "attention_overview_stat", "words": "attention_merge_words",
                  "qkq": "attention_qk_query", "qkk": "attention_qk_key", "group": "row_group",
                  "dsteps": "document_steps", "zoom": "map_zoom", "oscale": "map_overview_scale",
                  "poll": "attention_poll", "votes": "attention_poll_votes", "focus": "attention_focus"},
    "compare": {"compare": "compare_model", "text": "compare_text", "step": "compare_step", "kind": "compare_kind",
                "layer": "compare_layer", "head": "compare_head", "cmode": "compare_mode", "edit": "compare_edit",
                "way": "compare_masked_way", "text_b": "compare_text_b", "circ": "compare_circuits_n"},
    "train": {},
    "learn": {"text": "learn_text", "stage": "learn_stage"},
    "head": {"kind": "head_page_kind", "layer": "head_page_layer", "head": "head_page_head"},
    "dictionary": {"dict": "dictionary_pick", "feature": "dictionary_feature"},
}

# page -> link parameter -> the expander it opens: a link naming the beam width opens the beam tree, one naming the
# DecoderLens's encoder layer the logit lens, one naming an attribution method the attribution, one naming Inside one
# head's kind that expander (their widgets are drawn, and so in the link, only while open)
LINK_OPENS: dict[str, dict[str, str]] = {"decode": {"beam": "decode_beam_open", "enc_layer": "decode_lens_open",
                                                    "attr": "decode_attr_open", "inside": "decode_inside_open",
                                                    "qkk": "decode_qk_open", "tau": "decode_route_open"}}
