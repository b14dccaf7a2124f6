"""Shared fixtures: a tiny trained checkpoint and the real-shape Hugging Face models, each built once per test
session (per pytest-xdist worker). Under CI a skipped browser or desktop test fails (skips_under_ci). The library is
imported where a fixture needs it, not here: pytest-xdist's controller loads this file too and runs no test (torch
and the rest cost it ~2 CPU-s)."""
from __future__ import annotations

import functools
import multiprocessing
import os
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

import pytest

from tests.helpers.skips_under_ci import pytest_runtest_makereport  # noqa: F401 - a hook: pytest finds it here

if TYPE_CHECKING:
    from transformer.train import job_supervisor

TINY_MODEL = dict(d_model=16, n_heads=2, n_encoder_layers=2, n_decoder_layers=2, d_ff=32, dropout=0.3, max_len=24)
TINY_TRAIN = dict(batch_size=32, lr=3e-3, warmup_steps=5, max_steps=30, max_seconds=None, eval_every=1000,
                  eval_examples=10)


TINY_STEPS = 5  # barely trained: outputs stay long and varied, which the step-through tests need


def build_tiny_checkpoint(path: Path, task_name: str = "reverse", steps: int = TINY_STEPS) -> Path:
    """Train a tiny model for a few steps on a generated task and save it as a checkpoint directory."""
    from transformer.data import TaskSpec, make_task
    from transformer.model import default_configs
    from transformer.store import save_checkpoint
    from transformer.train import Trainer, checkpoint_from_trainer
    task = make_task(TaskSpec(name=task_name, n_train=300, n_valid=10, min_len=4, max_len=8))
    model_cfg, train_cfg = default_configs(task_name, task.src_tokenizer.vocab_size, task.tgt_tokenizer.vocab_size,
                                           model_overrides=TINY_MODEL, train_overrides=TINY_TRAIN)
    trainer = Trainer(task, model_cfg, train_cfg)
    trainer.run(max_steps=steps)
    trainer.evaluate()
    return save_checkpoint(checkpoint_from_trainer(trainer), path)


@pytest.fixture(scope="session")
def tiny_checkpoint_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A root directory holding one tiny trained checkpoint, `reverse` (2+2 layers, 2 heads, dropout 0.3)."""
    root = tmp_path_factory.mktemp("checkpoints")
    build_tiny_checkpoint(root / "reverse")
    return root


# The modules that take longest (rough seconds a module under a full run, from its --durations), each started
# first on a worker: pytest-xdist's work stealing hands each worker a contiguous share of the collection and lets an
# idle one take the tail of another's, so a long module left at a share's end ran alone while the others waited.
HEAVY_MODULES = {
    "tests/app/pages/test_app_edit_sizes.py": 240,
    "tests/library/train/test_distributed.py": 140,
    "tests/app/pages/test_app_lens_beam_sizes.py": 80,
    "tests/app/test_load.py": 60,
    "tests/library/train/test_stage_processes.py": 50,
    "tests/library/analysis/test_corpus_stats.py": 40,
    "tests/app/test_read_ahead.py": 27,
    "tests/library/train/test_stage_demo.py": 27,
    "tests/cli/test_cli_dictionary.py": 25,
    "tests/app/pages/test_app_head_computation.py": 20,
}


@pytest.hookimpl(trylast=True)  # after `-m`'s deselection, so the shares are those of the tests that run
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests that need SAELens's own venv run last: on a fresh machine it builds meanwhile (tests/helpers/
    saelens_venv.py), and no worker waits on it (a stable sort: the rest keep their order). Under pytest-xdist the
    heavy modules open the workers' shares and the browser modules are spread through them (`spread_shares`)."""
    items.sort(key=lambda item: "saelens_python" in getattr(item, "fixturenames", ()))
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0"))
    if workers > 1:
        items[:] = spread_shares(items, workers)


def spread_shares(items: list[pytest.Item], workers: int) -> list[pytest.Item]:
    """`items` reordered for the `workers` contiguous shares pytest-xdist first hands out (the first n // workers,
    then an even split of the rest): each share starts with its part of HEAVY_MODULES (each module whole, the
    costliest first to the least loaded share), and gets a like number of browser tests (whole modules, the largest
    first to the share with the fewest), set at even intervals among its other tests, which follow their order.
    Browser tests each drive a server and a Chromium: grouped in one share, the others stole them at the end and three
    ran at once (a load of 17 on 2 cores, and a page's first run outlasted two minutes). Unchanged if the heavy
    modules do not fit."""
    module = {id(item): item.nodeid.split("::")[0] for item in items}
    groups: dict[str, list[pytest.Item]] = {}
    for item in items:
        groups.setdefault(module[id(item)], []).append(item)
    heavy = sorted(groups.keys() & HEAVY_MODULES.keys(), key=lambda m: (-HEAVY_MODULES[m], m))  # one order everywhere
    browser = sorted((m for m, its in groups.items() if m not in HEAVY_MODULES
                      and any(i.get_closest_marker("browser") for i in its)), key=lambda m: (-len(groups[m]), m))
    sizes, left = [], len(items)
    for share in range(workers):
        sizes.append(left // (workers - share))
        left -= sizes[-1]
    shares: list[list[pytest.Item]] = [[] for _ in range(workers)]
    load = [0] * workers
    for name in heavy:
        share = load.index(min(load))
        shares[share] += groups[name]
        load[share] += HEAVY_MODULES[name]
    spread: list[list[list[pytest.Item]]] = [[] for _ in range(workers)]
    counts = [0] * workers
    for name in browser:
        share = counts.index(min(counts))
        spread[share].append(groups[name])
        counts[share] += len(groups[name])
    if any(len(share) + n > size for share, n, size in zip(shares, counts, sizes, strict=True)):
        return items
    taken = set(HEAVY_MODULES) | set(browser)
    rest = iter([item for item in items if module[id(item)] not in taken])
    for share, modules, n, size in zip(shares, spread, counts, sizes, strict=True):
        others = [next(rest) for _ in range(size - len(share) - n)]
        # the k-th of m browser modules after (k + 1) / (m + 1) of the share's other tests
        marks = [(k + 1) * len(others) // (len(modules) + 1) for k in range(len(modules))]
        start = 0
        for at, group in zip(marks, modules, strict=True):
            share += others[start:at] + group
            start = at
        share += others[start:]
    return [item for share in shares for item in share]


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start building SAELens's venv in the background once a session has collected a test that needs it."""
    if not session.config.option.collectonly and any("saelens_python" in getattr(item, "fixturenames", ())
                                                     for item in session.items):
        from tests.helpers.saelens_venv import start_building
        start_building()


@pytest.fixture(scope="session")
def saelens_python() -> Path:
    """The interpreter of SAELens's own venv (tests/helpers/saelens_venv.py); skips with pip's line without one."""
    from tests.helpers.saelens_venv import NotInstalled, saelens_python
    try:
        return saelens_python()
    except NotInstalled as failed:
        pytest.skip(f"sae-lens could not be installed apart (no package registry?): {failed}")


@pytest.fixture(scope="session", autouse=True)
def components_scanned_once() -> Iterator[None]:
    """Streamlit scans the metadata of every installed distribution for its components at the first run of each new
    AppTest (~0.15 CPU-s, and seconds of wall on a loaded machine, in a pool of threads); nothing is installed during
    a session, so each test process scans once."""
    from streamlit.components.v2 import manifest_scanner
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(manifest_scanner, "scan_component_manifests",
                      functools.cache(manifest_scanner.scan_component_manifests))
        yield


@pytest.fixture(scope="session")
def real_shapes_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A models folder holding opus-mt-shape, bart-large-heads and gpt2-heads (tests/helpers/real_shapes.py), built
    once per worker; the app's model cache is keyed by folder, so every real-shape test after the first loads none.
    Read-only: a test that changes a model builds its own."""
    from tests.helpers.real_shapes import build_real_shapes
    return build_real_shapes(tmp_path_factory.mktemp("hf_real_shapes"))


@pytest.fixture(autouse=True)
def analyses_drawn_in_the_same_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """An AppTest run draws a sweep or an agreement it starts, however loaded the machine: the page waits for the
    analysis instead of handing over to the progress bar after 2 s (test_app_background tests the bar)."""
    from ui.views.kit import background
    monkeypatch.setattr(background, "WAIT_S", 300.0)


@pytest.fixture
def studio_env(tiny_checkpoint_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Point the app at the tiny checkpoint and a fresh, empty runs directory (returned)."""
    from transformer.train import server_runs
    runs = tmp_path / "runs"
    monkeypatch.setenv("ATTENTION_STUDIO_CHECKPOINTS", str(tiny_checkpoint_dir))
    monkeypatch.setenv("ATTENTION_STUDIO_RUNS", str(runs))
    monkeypatch.delenv("ATTENTION_STUDIO_DEFAULT", raising=False)
    server_runs.clear()  # runs belong to the server process: each test starts with none
    yield runs
    server_runs.clear()


def _forked_process() -> job_supervisor.Launched:
    from transformer.train import job_supervisor, job_worker
    ctx = multiprocessing.get_context("fork")
    conn, child_conn = ctx.Pipe()
    process = ctx.Process(target=job_worker.main, args=(child_conn,), daemon=True)
    process.start()
    child_conn.close()

    def reap() -> None:
        process.join(10)
        if process.is_alive():
            process.kill()
            process.join()

    return job_supervisor.Launched(conn=conn, pid=process.pid, reap=reap)


@pytest.fixture
def forked_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Training processes forked from the test process, so a fault monkeypatched into `Trainer` reaches them.

    The app forks them from its own fork server, which never sees the test's patches; the rest is the same.
    """
    from transformer.train import job_supervisor
    monkeypatch.setattr(job_supervisor, "launch_process", _forked_process)
