"""One training recipe for the Multi30k 10-minute budget, emulated by a fixed step count (about what 600 s give on
2 cores), so that several recipes can run side by side on a loaded machine and still be compared: train the
corpus defaults with overrides, decode all of val greedily, score with sacrebleu.

    PYTHONPATH=. OMP_NUM_THREADS=1 python -m bench.quality.multi30k_recipe NAME STEPS MODEL_JSON TRAIN_JSON
    e.g. ... lr2 1100 '{}' '{"lr": 2e-3}'      (prints one JSON line)
"""
import json
import sys
import time

import torch

from bench.quality.multi30k import DATA, _files
from transformer.adapters import decode_texts
from transformer.analysis import corpus_scores
from transformer.data import TaskSpec, make_task
from transformer.model import default_configs
from transformer.train import Trainer


def main() -> None:
    """Train one recipe and print its steps, BLEU and chrF as one JSON line."""
    name, steps, model_o, train_o = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3]), json.loads(sys.argv[4])
    torch.set_num_threads(1)
    task = make_task(TaskSpec(name="corpus", n_valid=1014, **_files(DATA)))
    m, t = default_configs("corpus", task.src_tokenizer.vocab_size, task.tgt_tokenizer.vocab_size, None,
                           {"tie_embeddings": True, **model_o}, {"max_steps": steps, "eval_every": 10**6, **train_o})
    began = time.time()
    tr = Trainer(task, m, t, device="cpu")
    tr.run()
    model = tr.model.float().eval()
    outs = decode_texts(model, task.src_tokenizer, task.tgt_tokenizer, [e.source for e in task.valid])
    s = corpus_scores(outs, [e.target for e in task.valid])
    print(json.dumps({"name": name, "steps": tr.step, "bleu": round(s["bleu"], 2), "chrf": round(s["chrf"], 2),
                      "secs": round(time.time() - began), "m": model_o, "t": train_o, "sample": outs[:2]}), flush=True)


if __name__ == "__main__":
    main()
