"""Keep the offline model's word-embedding table in int8 (issue 23.2: ~33 MB of resident memory).

The offline model (all-MiniLM-L6-v2, int8) stores every weight as an int8 tensor and a float
scale, and turns it back into float32 inside the graph (Cast, then Mul by the scale). onnxruntime
folds those constant subgraphs when the session is built, so the session holds every weight in
float32: the word-embedding table alone is 30,522 x 384 floats, 44.7 MiB, of which a run reads
only the rows of its tokens. Here the graph is rewritten before the session is built so that the
lookup comes first and the conversion after it:

    before: table = Cast(q) * scale;  embedding = Gather(table, ids)
    after:  embedding = Cast(Gather(q, ids)) * Gather(scale, ids)

Each element is the same float32 product (an int8 value made float, times its row's scale), so
the vectors are bit-for-bit those of the original graph (tests/test_embed_lean.py compares them);
the session keeps the int8 table (11.2 MiB) and the per-row scales instead of the float table.
The other weights (the attention and feed-forward matrices, ~41 MiB in float32) stay folded:
unfolding them would convert ~7M weights in every run.

onnx (the package) is not a dependency: this reads and writes the few protobuf fields it needs
(ModelProto.graph, GraphProto.node, NodeProto's inputs, outputs, name and op_type) by the wire
format and copies every other byte as it was. Anything unexpected leaves the model unchanged.
`half_to_float` writes a model of one Cast node the same way (search/halfrows.py runs it).
"""

from __future__ import annotations

from collections.abc import Iterator

Buffer = bytes | memoryview
Field = tuple[int, int, Buffer | int]  # (field number, wire type, value)

_MODEL_GRAPH = 7  # ModelProto.graph
_GRAPH_NODE = 1  # GraphProto.node
_GRAPH_INITIALIZER = 5  # GraphProto.initializer
_TENSOR_NAME = 8  # TensorProto.name
_TENSOR_DIMS = 1  # TensorProto.dims
_NODE_INPUT, _NODE_OUTPUT, _NODE_NAME, _NODE_OP = 1, 2, 3, 4
_NODE_ATTRIBUTE = 5
_ATTR_NAME, _ATTR_I, _ATTR_TYPE = 1, 3, 20
_ATTR_INT = 2  # AttributeProto.AttributeType.INT
_CAST_TO_FLOAT = 1  # TensorProto.DataType.FLOAT


def _varint(data: Buffer, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, i


def _fields(data: Buffer) -> Iterator[Field]:
    """The fields of a message, values as views into `data` (the model's 22 MB are not copied)."""
    data = memoryview(data)
    i = 0
    while i < len(data):
        key, i = _varint(data, i)
        number, wire = key >> 3, key & 7
        value: Buffer | int
        if wire == 0:
            value, i = _varint(data, i)
        elif wire == 1:
            value, i = data[i : i + 8], i + 8
        elif wire == 5:
            value, i = data[i : i + 4], i + 4
        elif wire == 2:
            size, i = _varint(data, i)
            value, i = data[i : i + size], i + size
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        yield number, wire, value


def _enc_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _pieces(fields: list[Field]) -> list[Buffer]:
    """A message's bytes as pieces to join (views of the source where a field is unchanged)."""
    out: list[Buffer] = []
    for number, wire, value in fields:
        out.append(_enc_varint(number << 3 | wire))
        if isinstance(value, int):
            out.append(_enc_varint(value))
        elif wire == 2:
            out += [_enc_varint(len(value)), value]
        else:
            out.append(value)
    return out


def _encode(fields: list[Field]) -> bytes:
    return b"".join(_pieces(fields))


def _strings(fields: list[Field], number: int) -> list[str]:
    return [bytes(v).decode() for n, w, v in fields if n == number and not isinstance(v, int)]


def _node(op: str, name: str, inputs: list[str], outputs: list[str], extra: list[Field]) -> bytes:
    fields: list[Field] = [(_NODE_INPUT, 2, s.encode()) for s in inputs]
    fields += [(_NODE_OUTPUT, 2, s.encode()) for s in outputs]
    fields += [(_NODE_NAME, 2, name.encode()), (_NODE_OP, 2, op.encode()), *extra]
    return _encode(fields)


def _cast_to_float() -> Field:
    attr: list[Field] = [
        (_ATTR_NAME, 2, b"to"),
        (_ATTR_I, 0, _CAST_TO_FLOAT),
        (_ATTR_TYPE, 0, _ATTR_INT),
    ]
    return (_NODE_ATTRIBUTE, 2, _encode(attr))


def gather_before_dequantize(model: bytes) -> bytes | None:
    """The model with each Gather over a folded int8 table (Cast(q) * scale, the scale one per
    row) done on the int8 table and the scales instead; None when there is no such Gather or
    the model is not as expected."""
    try:
        return _rewrite(model)
    except (ValueError, IndexError, UnicodeDecodeError):
        return None


def _rewrite(model: bytes) -> bytes | None:
    top = list(_fields(model))
    graphs = [i for i, (n, w, v) in enumerate(top) if n == _MODEL_GRAPH and w == 2]
    if len(graphs) != 1:
        return None
    graph_bytes = top[graphs[0]][2]
    if isinstance(graph_bytes, int):
        return None
    graph = list(_fields(graph_bytes))
    nodes: list[tuple[int, list[Field]]] = [
        (i, list(_fields(v)))
        for i, (n, w, v) in enumerate(graph)
        if n == _GRAPH_NODE and not isinstance(v, int)
    ]
    dims = _initializer_dims(graph)
    producer = {out: (i, f) for i, f in nodes for out in _strings(f, _NODE_OUTPUT)}
    users: dict[str, int] = {}
    for _, f in nodes:
        for name in _strings(f, _NODE_INPUT):
            users[name] = users.get(name, 0) + 1
    drop: set[int] = set()
    replace: dict[int, list[bytes]] = {}
    for i, f in nodes:
        if _strings(f, _NODE_OP) != ["Gather"] or _attr_int(f, "axis", 0) != 0:
            continue
        inputs = _strings(f, _NODE_INPUT)
        if len(inputs) != 2 or users.get(inputs[0]) != 1 or inputs[0] not in producer:
            continue
        mul_i, mul = producer[inputs[0]]
        mul_in = _strings(mul, _NODE_INPUT)
        if _strings(mul, _NODE_OP) != ["Mul"] or len(mul_in) != 2 or mul_in[0] not in producer:
            continue
        cast_i, cast = producer[mul_in[0]]
        cast_in = _strings(cast, _NODE_INPUT)
        if (
            _strings(cast, _NODE_OP) != ["Cast"]
            or _attr_int(cast, "to", -1) != _CAST_TO_FLOAT
            or users.get(mul_in[0]) != 1
            or len(cast_in) != 1
        ):
            continue
        table, scale = dims.get(cast_in[0]), dims.get(mul_in[1])
        if table is None or scale is None or len(table) != 2 or scale != [table[0], 1]:
            continue  # only a per-row scale commutes with the row lookup
        result = _strings(f, _NODE_OUTPUT)[0]
        base = _strings(f, _NODE_NAME)[0] if _strings(f, _NODE_NAME) else result
        rows_q, rows_f, rows_s = (f"{result}__rows_{x}" for x in ("q", "f", "scale"))
        attrs = [x for x in f if x[0] == _NODE_ATTRIBUTE]
        replace[i] = [
            _node("Gather", f"{base}__q", [cast_in[0], inputs[1]], [rows_q], attrs),
            _node("Gather", f"{base}__scale", [mul_in[1], inputs[1]], [rows_s], attrs),
            _node("Cast", f"{base}__cast", [rows_q], [rows_f], [_cast_to_float()]),
            _node("Mul", f"{base}__mul", [rows_f, rows_s], [result], []),
        ]
        drop |= {mul_i, cast_i}
    if not replace:
        return None
    new_graph: list[Field] = []
    for i, field in enumerate(graph):
        if i in replace:
            new_graph += [(_GRAPH_NODE, 2, b) for b in replace[i]]
        elif i not in drop:
            new_graph.append(field)
    graph_pieces = _pieces(new_graph)
    size = sum(len(p) for p in graph_pieces)
    out: list[Buffer] = []
    for i, field in enumerate(top):  # one copy of the model, not one per level
        if i == graphs[0]:
            out += [_enc_varint(_MODEL_GRAPH << 3 | 2), _enc_varint(size), *graph_pieces]
        else:
            out += _pieces([field])
    return b"".join(out)


def _initializer_dims(graph: list[Field]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for n, _, v in graph:
        if n != _GRAPH_INITIALIZER or isinstance(v, int):
            continue
        tensor = list(_fields(v))
        names = _strings(tensor, _TENSOR_NAME)
        dims: list[int] = []
        for tn, tw, tv in tensor:
            if tn != _TENSOR_DIMS:
                continue
            if tw == 0 and isinstance(tv, int):
                dims.append(tv)
            elif tw == 2 and not isinstance(tv, int):  # packed
                j = 0
                while j < len(tv):
                    d, j = _varint(tv, j)
                    dims.append(d)
        if names:
            out[names[0]] = dims
    return out


def _attr_int(node: list[Field], name: str, default: int) -> int:
    for n, _, v in node:
        if n != _NODE_ATTRIBUTE or isinstance(v, int):
            continue
        attr = list(_fields(v))
        if _strings(attr, _ATTR_NAME) == [name]:
            for an, _, av in attr:
                if an == _ATTR_I and isinstance(av, int):
                    return av
    return default


_FLOAT16 = 10  # TensorProto.DataType.FLOAT16
_MODEL_IR_VERSION, _MODEL_OPSET = 1, 8  # ModelProto.ir_version, opset_import
_GRAPH_NAME, _GRAPH_INPUT, _GRAPH_OUTPUT = 2, 11, 12
_VALUE_NAME, _VALUE_TYPE = 1, 2  # ValueInfoProto
_TYPE_TENSOR, _TENSOR_ELEM, _TENSOR_SHAPE = 1, 1, 2  # TypeProto, TypeProto.Tensor
_SHAPE_DIM, _DIM_PARAM = 1, 2  # TensorShapeProto, its Dimension


def _value(name: str, elem: int) -> bytes:
    """A ValueInfoProto: a 2-D tensor of `elem` whose dimensions are named, not fixed."""
    dims: list[Field] = [
        (_SHAPE_DIM, 2, _encode([(_DIM_PARAM, 2, d.encode())])) for d in ("rows", "cols")
    ]
    tensor = _encode([(_TENSOR_ELEM, 0, elem), (_TENSOR_SHAPE, 2, _encode(dims))])
    kind = _encode([(_TYPE_TENSOR, 2, tensor)])
    return _encode([(_VALUE_NAME, 2, name.encode()), (_VALUE_TYPE, 2, kind)])


def half_to_float() -> bytes:
    """A model of one Cast node: input "half" (float16, any 2-D shape) to output "float"
    (float32), for search/halfrows.py (IR version 8, opset 13: onnxruntime >= 1.17 runs it)."""
    graph: list[Field] = [
        (_GRAPH_NODE, 2, _node("Cast", "cast", ["half"], ["float"], [_cast_to_float()])),
        (_GRAPH_NAME, 2, b"half_to_float"),
        (_GRAPH_INPUT, 2, _value("half", _FLOAT16)),
        (_GRAPH_OUTPUT, 2, _value("float", _CAST_TO_FLOAT)),
    ]
    opset: list[Field] = [(1, 2, b""), (2, 0, 13)]  # OperatorSetIdProto: domain, version
    return _encode(
        [
            (_MODEL_IR_VERSION, 0, 8),
            (_MODEL_OPSET, 2, _encode(opset)),
            (_MODEL_GRAPH, 2, _encode(graph)),
        ]
    )
