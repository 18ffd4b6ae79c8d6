"""Figures for the neural provider ``minilm`` (issue #9).

    python bench/neural_eval.py speed      # segments/s per core, int8 vs fp32 cosine
    python bench/neural_eval.py profile    # where the int8 core's time goes, per op type
    python bench/neural_eval.py latency    # query embedding time (cold and warm)
    python bench/neural_eval.py ndcg       # SciFact/CMRC nDCG@10, ngram vs minilm

Segments are SciFact abstracts cut into ~400-character pieces at word
boundaries. Timings are medians of ``--runs`` runs; the machine is shared, so
CPU seconds per segment are printed beside wall-clock rates (2 / cpu-s per
segment is what two idle cores would do). ``ndcg`` indexes each set once per
provider in ``--workdir`` (kept, so reruns only re-query) and scores auto mode
at several ``neural_weight`` values with docindex.evaluate.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from _common import SHARED_DIR

SHARED = SHARED_DIR / "eval"


def _segments(n: int, size: int = 400) -> list[str]:
    out: list[str] = []
    with open(SHARED / "scifact" / "corpus.jsonl", encoding="utf-8") as fh:
        for line in fh:
            text = json.loads(line)["text"]
            while len(text) > size // 2 and len(out) < n:
                cut = text.rfind(" ", 0, size)
                cut = size if cut <= 0 or len(text) <= size else cut
                out.append(text[:cut].strip())
                text = text[cut:]
            if len(out) >= n:
                break
    return out


def speed(args: argparse.Namespace) -> None:
    import numpy as np

    from docindex.embed.minilm import MiniLMEmbedder

    segs = _segments(args.n)
    vectors = {}
    for backend, int8 in (("onnx", True), ("onnx", False), ("numpy", False)):
        if backend == "numpy" and args.skip_numpy:
            continue
        emb = MiniLMEmbedder(backend=backend, int8=int8, threads=args.threads)
        emb.embed(segs[:8])
        tokens = statistics.mean(len(e.ids) for e in emb.tokenizer.encode_batch(segs))
        walls, cpus = [], []
        n = len(segs) if backend == "onnx" else min(len(segs), 128)
        for _ in range(args.runs):
            c0, w0 = time.process_time(), time.perf_counter()
            vecs = emb.embed(segs[:n])
            walls.append(time.perf_counter() - w0)
            cpus.append(time.process_time() - c0)
        vectors[(backend, int8)] = vecs
        wall, cpu = statistics.median(walls), statistics.median(cpus)
        print(f"{backend:5} int8={int8!s:5} {n} segs, {tokens:.0f} tokens/seg: "
              f"wall {n / wall:.1f} seg/s, cpu {cpu / n * 1000:.2f} ms/seg "
              f"(2 idle cores ~{2 * n / cpu:.0f} seg/s)", flush=True)  # fmt: skip
    ref = vectors[("onnx", False)]
    q = vectors[("onnx", True)]
    cos = (ref * q).sum(axis=1)
    print(f"int8 vs fp32 cosine: mean {cos.mean():.5f} min {cos.min():.5f}")
    if ("numpy", False) in vectors:
        npv = vectors[("numpy", False)]
        c = (ref[: len(npv)] * npv).sum(axis=1)
        print(f"onnx fp32 vs numpy cosine: min {c.min():.6f}")
    _ = np


def profile(args: argparse.Namespace) -> None:
    """Op-type breakdown from onnxruntime's profiler (one thread, embed()'s batches)."""
    import collections
    import os
    import tempfile

    import numpy as np
    import onnxruntime as ort

    from docindex.embed.minilm import (
        DISABLED_OPTIMIZERS,
        MiniLMEmbedder,
        _load_weights,
        build_graph,
        length_batches,
    )

    segs = _segments(args.n)
    emb = MiniLMEmbedder(backend="onnx", int8=not args.fp32)
    model = build_graph(emb, _load_weights(emb.folder), int8=emb.int8)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.log_severity_level = 3
    opts.enable_profiling = True
    opts.profile_file_prefix = os.path.join(tempfile.mkdtemp(), "minilm")
    session = ort.InferenceSession(
        model.SerializeToString(), opts, providers=["CPUExecutionProvider"],
        disabled_optimizers=DISABLED_OPTIMIZERS,
    )  # fmt: skip
    encodings = emb.tokenizer.encode_batch(segs)
    batches = length_batches([len(e.ids) for e in encodings])
    c0 = time.process_time()
    for batch in batches:
        ids = np.array([encodings[i].ids for i in batch], dtype=np.int64)
        session.run(["pooled"], {"input_ids": ids})
    cpu = time.process_time() - c0
    path = session.end_profiling()
    spent: collections.Counter[str] = collections.Counter()
    with open(path, encoding="utf-8") as fh:
        for event in json.load(fh):
            if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
                spent[event["args"]["op_name"]] += event["dur"]
    os.unlink(path)
    # Kernel durations are wall-clock (inflated on a busy machine): shares of
    # their total, times the process CPU time, give CPU ms per segment.
    total, per_seg = sum(spent.values()), cpu / len(segs) * 1000
    print(f"{len(segs)} segs in {len(batches)} batches: cpu {per_seg:.2f} ms/seg "
          f"(with the profiler on)")  # fmt: skip
    for op, us in spent.most_common():
        if us >= total / 1000:
            share = us / total
            print(f"  {op:24} {100 * share:5.1f}%  ~{share * per_seg:.3f} ms/seg")


def latency(args: argparse.Namespace) -> None:
    from docindex.embed.minilm import MiniLMEmbedder

    queries = [
        json.loads(line)["text"]
        for line in open(SHARED / "scifact" / "queries-test.jsonl", encoding="utf-8")
    ][: args.n]
    t0 = time.perf_counter()
    emb = MiniLMEmbedder()
    emb.embed(["warm up"])
    cold = time.perf_counter() - t0
    times = []
    for q in queries:
        t = time.perf_counter()
        emb.embed([q])
        times.append((time.perf_counter() - t) * 1000)
    print(f"cold start (load weights, build graph, session) {cold:.2f} s")
    print(f"query embedding: median {statistics.median(times):.2f} ms, "
          f"p90 {statistics.quantiles(times, n=10)[-1]:.2f} ms over {len(times)}")  # fmt: skip


def ndcg(args: argparse.Namespace) -> None:
    from docindex.api.evaluate import evaluate
    from docindex.config import Config

    weights = [float(w) for w in args.weights.split(",")]
    for name in args.sets.split(","):
        folder = SHARED / name
        for provider in ("ngram", "minilm"):
            work = Path(args.workdir) / f"{name}-{provider}"
            work.mkdir(parents=True, exist_ok=True)
            for weight in (
                weights if provider == "minilm" else [Config().semantic_weight]
            ):  # minilm: neural_weight; ngram: the default semantic_weight
                if provider == "minilm":
                    cfg = Config(embedding_provider=provider, neural_weight=weight)
                else:
                    cfg = Config(embedding_provider=provider, semantic_weight=weight)
                t0 = time.perf_counter()
                rep = evaluate(folder, modes=("auto",), cfg=cfg, workdir=work,
                               n_queries=args.queries)  # fmt: skip
                m = rep.modes[0]
                print(f"{name:12} {provider:6} w={weight:<5} nDCG@10 {m.ndcg_at_10:.4f} "
                      f"R@100 {m.recall_at_100:.4f} median query {m.median_query_ms} ms "
                      f"(index {rep.index_ms / 1000:.0f} s, total "
                      f"{time.perf_counter() - t0:.0f} s)", flush=True)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("speed")
    p.add_argument("--n", type=int, default=512)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--skip-numpy", action="store_true")
    p.add_argument("--threads", type=int, default=2)
    p = sub.add_parser("profile")
    p.add_argument("--n", type=int, default=512)
    p.add_argument("--fp32", action="store_true")
    p = sub.add_parser("latency")
    p.add_argument("--n", type=int, default=200)
    p = sub.add_parser("ndcg")
    p.add_argument("--sets", default="scifact,zh-cmrc2018")
    p.add_argument("--weights", default="0.5,1.0,2.0")
    p.add_argument("--queries", type=int, default=None)
    p.add_argument("--workdir", default="/tmp/docindex-neural-eval")
    args = parser.parse_args()
    commands = {"speed": speed, "profile": profile, "latency": latency, "ndcg": ndcg}
    commands[args.cmd](args)


if __name__ == "__main__":
    main()
