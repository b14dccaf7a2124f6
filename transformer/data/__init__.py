"""The data stage: tokenizers, tasks (generated, toy grammar, parallel corpora), examples and batching."""
from . import toy_en_de
from .answers import known_alignment, known_output
from .batching import END_ID, START_ID, Batch, BucketSampler, PackedIds, make_batch, pad, source_ids
from .corpus_files import DataError, parse_pairs_text, read_aligned_files, read_pairs_tsv
from .corpus_text import MAX_CORPUS_BYTES, MAX_CORPUS_LINES, Corpus, CorpusError, read_corpus
from .examples import Example, GoldSource
from .masking import MASK_ID, MASK_SHARE, MASK_TOKEN, MaskedBatches, masked_lm_task, pair_ids, probe_positions
from .sharding import ShardedBucketSampler, rank_share
from .subword import DEFAULT_SUBWORD_VOCAB, MIN_SUBWORD_VOCAB
from .task_spec import TaskSpec
from .tasks import (
                    GENERATED_TASKS,
                    TASK_NAMES,
                    Task,
                    gold_alignment,
                    gold_sources,
                    make_task,
                    task_from_spec,
)
from .tokenizers import (
                    END,
                    PAD,
                    START,
                    TOKENIZER_KINDS,
                    UNK,
                    Tokenizer,
                    TokenizerError,
                    build_char_tokenizer,
                    build_word_tokenizer,
)

__all__ = ["Batch", "BucketSampler", "build_char_tokenizer", "build_word_tokenizer", "DataError",
           "DEFAULT_SUBWORD_VOCAB", "END", "END_ID", "Example", "GENERATED_TASKS", "gold_alignment", "gold_sources",
           "GoldSource", "known_alignment", "known_output", "make_batch", "make_task", "MIN_SUBWORD_VOCAB",
           "PackedIds", "PAD", "pad", "parse_pairs_text", "rank_share", "read_aligned_files", "read_pairs_tsv",
           "ShardedBucketSampler", "source_ids", "START", "START_ID", "Task", "task_from_spec", "TASK_NAMES", "TaskSpec",
           "Tokenizer", "TOKENIZER_KINDS", "TokenizerError", "toy_en_de", "UNK"]
__all__ += ["MASK_ID", "MASK_SHARE", "MASK_TOKEN", "MaskedBatches", "masked_lm_task", "pair_ids", "probe_positions"]
__all__ += ["MAX_CORPUS_BYTES", "MAX_CORPUS_LINES", "Corpus", "CorpusError", "read_corpus"]
