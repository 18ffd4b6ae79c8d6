"""A BERT-style encoder as an ONNX graph, weights bound in (issues #9, #47).

``build_graph`` writes what ``minilm`` runs (all-MiniLM-L6-v2) and what
``e5onnx`` runs (multilingual-e5-small's documents): int8 linear layers,
onnxruntime's fused attention and Gelu, no padding and no attention mask.
Split from ``minilm`` (issue #49): ``_Graph`` holds the nodes and
initializers as they are made, one method per part of a layer. Node and
initializer names count up in the order the parts are made, so the same
inputs give the same bytes (``minilm.GRAPH_VERSION`` names a graph's shape).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy.typing as npt
    from onnx import ModelProto, NodeProto, TensorProto

    # Activations and weights: float32 mostly, int64 token ids, int8 weights.
    Array = npt.NDArray[Any]
    Weights = dict[str, Array]

_MS = "com.microsoft"  # onnxruntime's fused kernels: attention, gelu


class Encoder(Protocol):
    """What ``build_graph`` reads of an encoder: its shape and options."""

    dim: int
    layers: int
    heads: int
    eps: float
    pooling: str


class _Graph:
    """Nodes and initializers in the order they are made, named ``prefix_N``."""

    def __init__(self, emb: Encoder, w: Weights, *, int8: bool) -> None:
        self.emb, self.w, self.int8 = emb, w, int8
        self.nodes: list[NodeProto] = []
        self.inits: list[TensorProto] = []
        self.counter = 0

    def name(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}_{self.counter}"

    def const(self, value: object, prefix: str = "c") -> str:
        import numpy as np
        from onnx import numpy_helper

        n = self.name(prefix)
        self.inits.append(numpy_helper.from_array(np.asarray(value), n))
        return n

    def node_n(self, op: str, inputs: list[str], n_out: int, **attrs: Any) -> list[str]:
        from onnx import helper

        outs = [self.name(op.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op, inputs, outs, **attrs))
        return outs

    def node(self, op: str, inputs: list[str], **attrs: Any) -> str:
        return self.node_n(op, inputs, 1, **attrs)[0]

    def linear(self, x: str, weight: Array, bias: Array) -> str:
        import numpy as np
        from onnx import TensorProto

        node, const = self.node, self.const
        wt = np.ascontiguousarray(weight.T.astype(np.float32))  # (in, out)
        if not self.int8:
            return node("Add", [node("MatMul", [x, const(wt, "w")]), const(bias, "b")])
        # Symmetric per-output-channel int8 weights; activations quantised per
        # tensor at run time (DynamicQuantizeLinear -> uint8). ORT fuses this
        # pattern into MatMulIntegerToFloat.
        scale = np.maximum(np.abs(wt).max(axis=0), 1e-12) / 127.0
        wq = np.clip(np.rint(wt / scale), -127, 127).astype(np.int8)
        xq, xs, xz = self.node_n("DynamicQuantizeLinear", [x], 3)
        mm = node("MatMulInteger", [xq, const(wq, "wq"), xz,
                                    const(np.zeros(wq.shape[1], np.int8), "wz")])  # fmt: skip
        f = node("Cast", [mm], to=TensorProto.FLOAT)
        s = node("Mul", [xs, const(scale.astype(np.float32), "ws")])
        return node("Add", [node("Mul", [f, s]), const(bias.astype(np.float32), "b")])

    def layer_norm(self, x: str, prefix: str) -> str:
        w, const = self.w, self.const
        return self.node("LayerNormalization", [x, const(w[f"{prefix}.weight"], "g"),
                         const(w[f"{prefix}.bias"], "beta")], axis=-1,
                         epsilon=self.emb.eps)  # fmt: skip

    def skip_ln(self, out: str, residual: str, prefix: str) -> str:
        return self.layer_norm(self.node("Add", [out, residual]), prefix)

    def embeddings(self, source: str, embeds: bool) -> str:
        """Word + position + token-type vectors, normalised."""
        import numpy as np

        node, const, w = self.node, self.const, self.w
        shape = node("Shape", [source])
        t = node("Gather", [shape, const(np.int64(1))], axis=0)
        positions = node("Range", [const(np.int64(0)), t, const(np.int64(1))])
        words = (
            "inputs_embeds"
            if embeds
            else node(
                "Gather",
                [const(w["embeddings.word_embeddings.weight"], "we"), "input_ids"],
            )
        )
        x = node("Add", [
            words,
            node("Gather", [const(w["embeddings.position_embeddings.weight"], "pe"),
                            positions]),
        ])  # fmt: skip
        x = node(
            "Add", [x, const(w["embeddings.token_type_embeddings.weight"][0], "te")]
        )
        return self.layer_norm(x, "embeddings.LayerNorm")

    def attention(self, x: str, p: str, shapes: tuple[str, str] | None) -> str:
        """Self-attention of layer ``p``; ``shapes``: the plain graph's reshapes
        (split into heads, merge back), None for the fused kernel."""
        w, node, linear = self.w, self.node, self.linear
        heads, dh = self.emb.heads, self.emb.dim // self.emb.heads
        # MultiHeadAttention scales by 1/sqrt(dh) itself
        scale = 1.0 if shapes is None else 1.0 / math.sqrt(dh)
        q = linear(x, w[p + "attention.self.query.weight"] * scale,
                   w[p + "attention.self.query.bias"] * scale)  # fmt: skip
        k = linear(
            x, w[p + "attention.self.key.weight"], w[p + "attention.self.key.bias"]
        )
        v = linear(
            x, w[p + "attention.self.value.weight"], w[p + "attention.self.value.bias"]
        )
        if shapes is None:
            return node("MultiHeadAttention", [q, k, v], domain=_MS, num_heads=heads)
        split_shape, merge_shape = shapes
        q = node("Transpose", [node("Reshape", [q, split_shape])], perm=[0, 2, 1, 3])
        k = node("Transpose", [node("Reshape", [k, split_shape])], perm=[0, 2, 3, 1])
        v = node("Transpose", [node("Reshape", [v, split_shape])], perm=[0, 2, 1, 3])
        probs = node("Softmax", [node("MatMul", [q, k])], axis=-1)
        ctx = node("Transpose", [node("MatMul", [probs, v])], perm=[0, 2, 1, 3])
        return node("Reshape", [ctx, merge_shape])

    def gelu(self, h: str, fused: bool) -> str:
        import numpy as np

        node, const = self.node, self.const
        if fused:
            return node("Gelu", [h], domain=_MS)
        erf = node("Erf", [node("Mul", [h, const(np.float32(1 / math.sqrt(2.0)))])])
        return node("Mul", [node("Mul", [h, const(np.float32(0.5))]),
                            node("Add", [erf, const(np.float32(1.0))])])  # fmt: skip

    def layer(self, x: str, i: int, shapes: tuple[str, str] | None) -> str:
        """Encoder layer ``i``: attention, then the feed-forward block."""
        w, linear = self.w, self.linear
        p = f"encoder.layer.{i}."
        ctx = self.attention(x, p, shapes)
        out = linear(ctx, w[p + "attention.output.dense.weight"],
                     w[p + "attention.output.dense.bias"])  # fmt: skip
        x = self.skip_ln(out, x, p + "attention.output.LayerNorm")
        h = linear(
            x, w[p + "intermediate.dense.weight"], w[p + "intermediate.dense.bias"]
        )
        gelu = self.gelu(h, shapes is None)
        out = linear(gelu, w[p + "output.dense.weight"], w[p + "output.dense.bias"])
        return self.skip_ln(out, x, p + "output.LayerNorm")


def build_graph(
    emb: Encoder, w: Weights, *, int8: bool = True, fused: bool = True,
    embeds: bool = False,
) -> ModelProto:  # fmt: skip
    """The encoder as an ONNX ModelProto with ``w``'s tensors bound as initializers.

    Input ``input_ids`` (int64, batch x tokens, every row a whole text: there
    is no padding and no attention mask, see ``minilm.length_batches``); output
    ``pooled`` (float32, batch x hidden), mean- or CLS-pooled, not normalised.
    ``fused`` uses onnxruntime's contrib kernels (MultiHeadAttention, Gelu);
    without it the graph is plain ONNX opset 17. Residual + LayerNormalization
    stay two nodes (see ``minilm.DISABLED_OPTIMIZERS``). ``embeds``: the input is
    ``inputs_embeds`` (float32, batch x tokens x hidden), the word vectors
    looked up by the caller (issue #47: a 250k-word vocabulary kept at 4 bits
    outside the graph).
    """
    import numpy as np
    from onnx import TensorProto, helper

    g = _Graph(emb, w, int8=int8)
    heads, dh, hid = emb.heads, emb.dim // emb.heads, emb.dim
    x = g.embeddings("inputs_embeds" if embeds else "input_ids", embeds)
    shapes = None
    if not fused:
        shapes = (g.const(np.array([0, 0, heads, dh], np.int64)),
                  g.const(np.array([0, 0, hid], np.int64)))  # fmt: skip
    for i in range(emb.layers):
        x = g.layer(x, i, shapes)
    if emb.pooling == "cls":
        pooled = g.node("Gather", [x, g.const(np.int64(0))], axis=1)
    else:
        pooled = g.node("ReduceMean", [x], axes=[1], keepdims=0)
    g.nodes.append(helper.make_node("Identity", [pooled], ["pooled"]))
    graph = helper.make_graph(
        g.nodes, "docindex_minilm",
        [helper.make_tensor_value_info("inputs_embeds", TensorProto.FLOAT, ["b", "t", hid])
         if embeds else
         helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["b", "t"])],
        [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["b", hid])],
        initializer=g.inits,
    )  # fmt: skip
    opsets = [helper.make_opsetid("", 17)]
    if fused:
        opsets.append(helper.make_opsetid(_MS, 1))
    return helper.make_model(graph, opset_imports=opsets, ir_version=8)
