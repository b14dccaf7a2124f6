"""The dictionaries stage: sparse autoencoders ("dictionaries") on one site of a model, their features, in SAELens's
folder format, trained on the model's own activations, and a score taken apart into pairs of dictionary features
(docs/dictionaries.md)."""
from .activations import MAX_TOKENS, Activations, site_activations
from .corpus import CORPUS_LINES, STREAM_TASKS, TrainingTexts, corpus_texts, task_texts
from .dictionary import ACTIVATIONS, Dictionary
from .feature_corpus import FeatureCorpus, example_sources, feature_corpus
from .feature_page import promoted_tokens, reading_heads
from .feature_qk import ERROR, FEATURES, FeatureQKTable, feature_qk, needed_sites
from .feature_sources import FeatureSources, feature_sources
from .feature_stats import Example, decile_counts, decile_examples, encoded, feature_frame, top_examples
from .job import job_rows, text_share
from .saelens_folder import SAELENS_VERSION, config_of, is_dictionary_folder, load_dictionary, save_dictionary
from .sites import ATTN, RESID, DictionaryError, Place, Site, place
from .store_sources import store_feature_sources
from .text_sources import TextSources, text_feature_sources
from .training import TRAINABLE, Report, RowShard, TrainSettings, TrainStep, evaluate, train_dictionary

__all__ = ["ACTIVATIONS", "ATTN", "CORPUS_LINES", "ERROR", "FEATURES", "MAX_TOKENS", "RESID", "SAELENS_VERSION",
           "STREAM_TASKS", "TRAINABLE", "Activations", "Dictionary", "DictionaryError", "Example", "FeatureCorpus",
           "FeatureQKTable", "FeatureSources", "Place", "Report", "RowShard", "Site", "TextSources", "TrainSettings",
           "TrainStep", "TrainingTexts", "config_of", "corpus_texts", "decile_counts", "decile_examples", "encoded",
           "evaluate", "example_sources", "feature_corpus", "feature_frame", "feature_qk", "feature_sources",
           "is_dictionary_folder", "job_rows", "load_dictionary", "needed_sites", "place", "promoted_tokens",
           "reading_heads", "save_dictionary", "site_activations", "store_feature_sources", "task_texts",
           "text_feature_sources", "text_share", "top_examples", "train_dictionary"]
