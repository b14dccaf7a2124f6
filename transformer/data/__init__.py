"""The data stage: tokenizers, tasks (generated, toy grammar, parallel corpora), examples and batching."""
from . import toy_en_de
from .answers import answer_steps, known_alignment, known_output
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
from .text_bytes import text_from_bytes
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

__all__ = ["DEFAULT_SUBWORD_VOCAB", "END", "END_ID", "GENERATED_TASKS", "MIN_SUBWORD_VOCAB", "PAD", "START", "START_ID",
           "TASK_NAMES", "TOKENIZER_KINDS", "UNK", "Batch", "BucketSampler", "DataError", "Example", "GoldSource",
           "PackedIds", "ShardedBucketSampler", "Task", "TaskSpec", "Tokenizer", "TokenizerError", "answer_steps",
           "build_char_tokenizer", "build_word_tokenizer", "gold_alignment", "gold_sources", "known_alignment",
           "known_output", "make_batch", "make_task", "pad", "parse_pairs_text", "rank_share", "read_aligned_files",
           "read_pairs_tsv", "source_ids", "task_from_spec", "toy_en_de"]
__all__ += ["MASK_ID", "MASK_SHARE", "MASK_TOKEN", "MaskedBatches", "masked_lm_task", "pair_ids", "probe_positions"]
__all__ += ["MAX_CORPUS_BYTES", "MAX_CORPUS_LINES", "Corpus", "CorpusError", "read_corpus"]
__all__ += ["text_from_bytes"]
