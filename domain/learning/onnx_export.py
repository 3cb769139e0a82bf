"""ONNX (optional extra: `onnx` to export, `onnxruntime` to run): `export_onnx` writes the
logistic model (every calibrated copy: scaler, logistic decision, isotonic interpolation or
sigmoid; then their mean) as a hand-built float64 graph with float32 input and output;
`onnx_predict` runs it with onnxruntime on CPU. It matches `MetaModel.predict_proba` to
float32 precision. skl2onnx is not used: it mis-converts this model (see export_onnx).
LightGBM models are not exported. A model of the `fill` rule carries its fill values in the
graph (IsNaN | IsInf -> Where); the rule goes into the metadata_props, and `onnx_predict`
leaves out the rows the rule leaves out (NaN), as `MetaModel.predict_proba` does.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from domain.learning.matrix import usable_rows
from domain.learning.logistic_folds import LogisticFold, logistic_folds
from domain.learning.metamodel import MetaModel
from domain.learning.persistence import atomic_write

ONNX_HINT = "pip install onnx onnxruntime (the project's optional extra: pip install 'tradelab[onnx]')"


#
# The graph is built by hand with onnx.helper, not with skl2onnx: skl2onnx 1.20 gets this
# model wrong in two ways. (1) Around a Pipeline it calibrates predict_proba instead of the
# decision function (sklearn calibrates decision_function), off by up to 0.5. (2) Its
# isotonic step takes the NEAREST threshold, sklearn interpolates linearly between
# thresholds; with thresholds 1e-6 apart and slopes of 1e4 that is not a rounding error.
# The hand graph repeats sklearn's arithmetic in float64 (MetaModel feeds the estimator
# float64, see predict_proba), so the two agree to float32 output precision.


def _fold_nodes(h, numpy_helper, TensorProto, fold: LogisticFold, i: int, nodes: list, inits: list) -> str:
    """Nodes for one calibrated copy: X -> decision (float64) -> calibrated P(y = 1)."""

    def const(name, value, dtype=np.float64):
        inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), f"f{i}_{name}"))
        return f"f{i}_{name}"

    def node(op, inputs, name, **kw):
        nodes.append(h.make_node(op, inputs, [f"f{i}_{name}"], name=f"f{i}_{name}", **kw))
        return f"f{i}_{name}"

    z = "X64"
    if fold.mean is not None:
        z = node("Sub", [z, const("mean", fold.mean)], "centred")
    if fold.scale is not None:
        z = node("Div", [z, const("scale", fold.scale)], "scaled")
    d = node("Add", [node("MatMul", [z, const("coef", fold.coef_t)], "xw"), const("b", fold.intercept)], "decision")
    if fold.method == "sigmoid":  # expit(-(a * d + b))
        lin = node("Add", [node("Mul", [d, const("a", fold.a)], "ad"), const("sb", fold.b)], "adb")
        return node("Sigmoid", [node("Neg", [lin], "neg")], "p")
    xs, ys = fold.xs, fold.ys
    if xs.size == 1:  # constant calibrator
        return node("Add", [node("Mul", [d, const("zero", 0.0)], "d0"), const("y", ys[0])], "p")
    t = node("Clip", [d, const("lo", fold.x_min), const("hi", fold.x_max)], "clipped")
    # segment j = #{xs[1:] < t} (t <= xs[-1] after the clip), then scipy's interp1d formula
    below = node("Cast", [node("Less", [const("xs_hi", xs[1:].reshape(1, -1)), t], "lt")], "lt64",
                 to=TensorProto.INT64)
    j = node("ReduceSum", [below, const("axis", [1], np.int64)], "j", keepdims=1)
    j1 = node("Add", [j, const("one", 1, np.int64)], "j1")
    xs_c, ys_c = const("xs", xs), const("ys", ys)
    x0, x1 = node("Gather", [xs_c, j], "x0"), node("Gather", [xs_c, j1], "x1")
    y0, y1 = node("Gather", [ys_c, j], "y0"), node("Gather", [ys_c, j1], "y1")
    slope = node("Div", [node("Sub", [y1, y0], "dy"), node("Sub", [x1, x0], "dx")], "slope")
    return node("Add", [node("Mul", [slope, node("Sub", [t, x0], "tx")], "rise"), y0], "p")


def export_onnx(model: MetaModel, path, *, opset: int = 17) -> Path:
    """Write the logistic meta model as ONNX: input "X" float32 [n, k], output
    "probabilities" float32 [n, 2] (P(y = 0), P(y = 1)); the feature names, versions and
    training window go into the model's metadata_props."""
    if model.kind != "logistic":
        raise NotImplementedError(f"ONNX export covers model='logistic' only, not {model.kind!r}")
    try:
        import onnx
        from onnx import TensorProto, helper as h, numpy_helper
    except ImportError as e:
        raise ImportError(f"ONNX export needs the onnx package: {ONNX_HINT}") from e
    try:
        params = logistic_folds(model.estimator)
    except NotImplementedError as e:
        raise NotImplementedError(f"ONNX export: {e}") from e
    k = model.n_features
    nodes, inits = [], []
    x = "X"
    if model.missing == "fill":  # X where finite, else the column's training median
        inits.append(numpy_helper.from_array(np.asarray(model.fill_values, np.float32).reshape(1, k), "fill"))
        nodes += [h.make_node("IsNaN", ["X"], ["x_nan"], name="x_nan"),
                  h.make_node("IsInf", ["X"], ["x_inf"], name="x_inf"),
                  h.make_node("Or", ["x_nan", "x_inf"], ["x_bad"], name="x_bad"),
                  h.make_node("Where", ["x_bad", "fill", "X"], ["X_filled"], name="X_filled")]
        x = "X_filled"
    nodes.append(h.make_node("Cast", [x], ["X64"], name="X64", to=TensorProto.DOUBLE))
    folds = [_fold_nodes(h, numpy_helper, TensorProto, fold, i, nodes, inits) for i, fold in enumerate(params)]
    inits.append(numpy_helper.from_array(np.asarray(len(folds), np.float64), "n_folds"))
    inits.append(numpy_helper.from_array(np.asarray(1.0, np.float64), "one64"))
    nodes += [
        h.make_node("Sum", folds, ["p_sum"], name="p_sum"),
        h.make_node("Div", ["p_sum", "n_folds"], ["p1"], name="p1"),
        h.make_node("Sub", ["one64", "p1"], ["p0"], name="p0"),
        h.make_node("Concat", ["p0", "p1"], ["p64"], name="p64", axis=1),
        h.make_node("Cast", ["p64"], ["probabilities"], name="probabilities", to=TensorProto.FLOAT),
    ]
    graph = h.make_graph(nodes, "tradelab_meta", [h.make_tensor_value_info("X", TensorProto.FLOAT, ["n", k])],
                         [h.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["n", 2])], inits)
    onx = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)], producer_name="tradelab.domain.learning.onnx_export")
    onx.ir_version = 8
    h.set_model_props(onx, {"features": json.dumps(model.feature_names), "versions": json.dumps(model.versions),
                            "window": json.dumps(model.window, default=str), "calibration": model.calibration,
                            "missing": model.missing})
    onnx.checker.check_model(onx)
    return atomic_write(path, lambda fh: fh.write(onx.SerializeToString()))


def onnx_predict(path, X) -> np.ndarray:
    """float32 [n] P(y = 1) from an exported model; NaN for the rows its missing-value rule
    (metadata_props `missing`; `drop` for files written before it) leaves out."""
    try:
        import onnxruntime as ort
    except ImportError as e:
        raise ImportError(f"ONNX inference needs onnxruntime: {ONNX_HINT}") from e
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    X = np.asarray(X, dtype=np.float32)
    k = sess.get_inputs()[0].shape[1]
    if X.ndim != 2 or (isinstance(k, int) and X.shape[1] != k):
        raise ValueError(f"X must be [n, {k}], got shape {X.shape}")
    out = np.full(X.shape[0], np.nan, dtype=np.float32)
    props = sess.get_modelmeta().custom_metadata_map
    names = json.loads(props["features"]) if "features" in props else [f"x{j}" for j in range(X.shape[1])]
    ok = usable_rows(X, names, props.get("missing", "drop"))
    if ok.any():
        proba = sess.run(["probabilities"], {"X": np.ascontiguousarray(X[ok])})[0]
        out[ok] = proba[:, 1]
    return out
